"""The sealed protocol in real runs (tiny model, small gsm8k splits, the scripted agent, the
isolated sandbox): the held-out split is split into dev and test at pin time, the test file is
opened only after the agent's phase has ended, run.json carries the ``scoring`` block;
``protocol = "reference"`` grades as before (the whole held-out split, the best reported, and
the same numbers a dev + test evaluation of the same checkpoints gives); a harness failure
ends ``infra_error`` (docs/scoring.md)."""

from __future__ import annotations

import json
import sys
import time
import types
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from autorl_runner.run import Run, RunOutcome
from autorl_sandbox_isolated.sandbox import bwrap_path

from autorl import hookimpl
from autorl.config import RunConfig
from autorl.registry import Registry
from autorl.specs import SandboxSpec

pytestmark = [
    pytest.mark.e2e,  # two real runs (sealed, reference) shared by the module
    pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap not installed"),
]

OPTIONS = {"train_size": 20, "eval_size": 16}
SEALED_OPENS: list[tuple[float, str]] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Every open of a sealed split in this process (the grader evaluates in-process)."""
    if event == "open" and args and "task-data/sealed" in str(args[0]):
        SEALED_OPENS.append((time.time(), str(args[0])))


sys.addaudithook(_audit)  # cannot be removed; cheap (one string test per open)


def _config(tmp: Path, run_id: str, **scoring: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "task": "gsm8k",
            "model": "tiny",
            "seed": 0,
            "runs_dir": str(tmp),
            "run_id": run_id,
            "task_options": OPTIONS,
            "budget": {"wall_seconds": 60},  # a scored submission even on a slow, busy machine
            # a fixed amount of training (the budget is the guard): the protocol is under test
            "agent_options": {"phase_seconds": 4},
            "scoring": scoring,
        }
    )


def _events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def _stamp(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()


def _scored(run_dir: Path) -> dict[int, dict[str, Any]]:
    merged: dict[int, dict[str, Any]] = {}
    for line in (run_dir / "submissions.jsonl").read_text().splitlines():
        entry = json.loads(line)
        merged.setdefault(entry["submission_id"], {}).update(entry)
    return {k: v for k, v in merged.items() if v["status"] == "scored"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("scoring")
    SEALED_OPENS.clear()
    out: dict[str, Any] = {}
    for name, scoring, keep in (
        ("sealed", {"test_all": True}, False),
        ("reference", {"protocol": "reference"}, True),
    ):
        config = _config(root, name, **scoring).model_copy(update={"keep_checkpoints": keep})
        engine = Run(config, quiet=True)
        outcome: RunOutcome = engine.execute()
        out[name] = (outcome, root / name)
        out[name + "_engine"] = engine
    return out


def test_the_held_out_split_is_split_deterministically_into_dev_and_test(runs: dict) -> None:
    _, run_dir = runs["sealed"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["task"]["protocol"] == "sealed"
    assert manifest["task"]["split_sizes"] == {"dev": 8, "test": 8}
    dev = (run_dir / "task-data" / "eval" / "eval.jsonl").read_text().splitlines()
    test = (run_dir / "task-data" / "sealed" / "eval.jsonl").read_text().splitlines()
    whole = (runs["reference"][1] / "task-data" / "eval" / "eval.jsonl").read_text().splitlines()
    assert len(dev) == len(test) == 8 and not set(dev) & set(test)
    assert sorted(dev + test) == sorted(whole)
    assert [x for x in whole if x in dev] == dev  # each part keeps the file's order
    from autorl.digest import file_digest

    assert manifest["hashes"]["eval"] == file_digest([run_dir / "task-data/eval/eval.jsonl"])
    assert manifest["hashes"]["test"] == file_digest([run_dir / "task-data/sealed/eval.jsonl"])
    # the agent reads dev scores only, and is told how its score is made
    text = (run_dir / "workspace" / "instructions.md").read_text()
    assert "sealed **test** split (8 examples)" in text and "POST /final" in text
    assert all(s["n"] == 8 for s in _scored(run_dir).values())
    assert not [p for p in (run_dir / "workspace").rglob("*") if "sealed" in p.name]


def test_the_sealed_split_is_opened_only_after_the_agent_phase_ended(runs: dict) -> None:
    _, run_dir = runs["sealed"]
    events = _events(run_dir)
    stopped = next(e for e in events if e["event"] == "agent_stopped")
    started = next(e for e in events if e["event"] == "sealed_evaluation_started")
    mine = [(t, p) for t, p in SEALED_OPENS if str(run_dir) in p]
    assert mine, "the sealed split was never evaluated"
    # the file is created at pin time (written, not opened for reading, by the audit's
    # "open" of the writer: that one precedes the agent's launch) and read only after
    launched = _stamp(next(e for e in events if e["event"] == "agent_launch"))
    reads = [t for t, _ in mine if t > launched]
    assert reads and min(reads) >= _stamp(stopped) - 0.01, (mine, stopped)
    assert _stamp(started) >= _stamp(stopped)
    assert not [t for t, _ in mine if launched < t < _stamp(stopped)]


def test_run_json_carries_the_scoring_block(runs: dict) -> None:
    outcome, run_dir = runs["sealed"]
    info = json.loads((run_dir / "run.json").read_text())
    block = info["scoring"]
    scored = _scored(run_dir)
    assert scored, "the scripted agent scored nothing"
    assert block["protocol"] == "sealed"
    sid = block["selection"]["submission_id"]
    best = max(scored, key=lambda s: (scored[s]["score"], s))
    assert block["selection"] == {"submission_id": best, "rule": "best_dev"}
    assert block["dev"]["best"] == scored[best]["score"] == block["dev"]["selected"]
    assert block["dev"]["n"] == 8 and block["test"]["n"] == 8
    sealed = json.loads((run_dir / "sealed" / f"{sid}.json").read_text())
    test_base = json.loads((run_dir / "baseline-test.json").read_text())
    assert block["test"]["selected"] == block["score"] == sealed["score"]
    assert block["baseline"] == block["test"]["baseline"] == test_base["score"]
    assert block["improvement"] == pytest.approx(block["score"] - block["baseline"])
    assert block["selection_gap"] == pytest.approx(block["dev"]["selected"] - block["score"])
    for key in ("score_se", "baseline_se", "improvement_se", "selection_gap_se"):
        assert isinstance(block[key], float) and block[key] >= 0, key
    assert {a["submission_id"] for a in block["test"]["all"]} == set(scored)
    best_test = max(a["score"] for a in block["test"]["all"])
    assert block["oracle_gap"] == pytest.approx(best_test - block["score"])
    assert outcome.score == block["score"] and outcome.protocol == "sealed"
    assert outcome.improvement == pytest.approx(block["improvement"])
    # the kept graded directories are released after the sealed evaluation
    assert not list((run_dir / "submissions").glob("*/graded"))
    assert info["end_reason"] != "infra_error"


def test_reference_grades_the_whole_split_and_matches_dev_plus_test(runs: dict) -> None:
    outcome, run_dir = runs["reference"]
    block = json.loads((run_dir / "run.json").read_text())["scoring"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["task"]["protocol"] == "reference" and "split_sizes" not in manifest["task"]
    assert "test" not in manifest["hashes"] and not (run_dir / "task-data" / "sealed").exists()
    scored = _scored(run_dir)
    assert scored and all(s["n"] == 16 for s in scored.values())
    best = max(scored, key=lambda s: (scored[s]["score"], s))
    assert block["protocol"] == "reference" and "test" not in block
    assert block["selection"] == {"submission_id": best, "rule": "best"}
    assert block["score"] == scored[best]["score"] == outcome.best_score == outcome.score
    baseline = json.loads((run_dir / "baseline.json").read_text())
    assert block["baseline"] == baseline["score"] and baseline["n"] == 16
    # the reference run's best checkpoint, evaluated on the sealed run's dev and test files
    # (the same 16 examples in two parts): the n-weighted mean is the reference score
    from autorl.types import EvalRequest

    engine = runs["reference_engine"]
    sealed_dir = runs["sealed"][1]
    parts = []
    for split in ("eval", "sealed"):
        result = engine.setup.evaluator.evaluate(
            EvalRequest(
                model_dir=run_dir / "submissions" / str(best) / "graded",
                eval_path=sealed_dir / "task-data" / split / "eval.jsonl",
                config=engine.setup.evaluator_config,
                work_dir=run_dir / "check" / split,
                seed=0,
                contract=engine.setup.contract,
                base_model_dir=engine.setup.model_info.path,
            )
        )
        parts.append((result.score, result.n))
    whole = sum(score * n for score, n in parts) / sum(n for _, n in parts)
    assert block["score"] == pytest.approx(whole), parts


class BrokenSandbox:
    """A sandbox whose start fails: the harness's side, not the agent's."""

    name = "broken"
    isolated = True

    def check(self) -> None:
        """Its tools are there: it fails only when it starts."""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "isolated": True}

    def start(self, request: Any) -> Any:
        raise RuntimeError("could not set up the namespaces (injected)")


def _broken_plugin() -> types.ModuleType:
    module = types.ModuleType("autorl_test_broken_sandbox")
    module.BrokenSandbox = BrokenSandbox  # type: ignore[attr-defined]

    @hookimpl
    def autorl_register_sandboxes() -> list[SandboxSpec]:
        return [
            SandboxSpec(
                name="broken",
                factory="autorl_test_broken_sandbox:BrokenSandbox",
                description="starts nothing (a test of infra_error)",
            )
        ]

    module.autorl_register_sandboxes = autorl_register_sandboxes  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    return module


def test_a_sandbox_that_cannot_start_ends_infra_error(tmp_path: Path) -> None:
    registry = Registry.from_entry_points()
    registry.register(_broken_plugin(), "autorl-test-broken-sandbox")
    config = _config(tmp_path, "broken").model_copy(update={"sandbox": "broken"})
    with pytest.raises(RuntimeError, match="injected"):
        Run(config, registry=registry, quiet=True).execute()
    info = json.loads((tmp_path / "broken" / "run.json").read_text())
    assert info["end_reason"] == "infra_error" and info["status"] == "failed"
    assert "could not set up the namespaces" in info["infra_cause"]
    assert info["scoring"]["protocol"] == "sealed" and info["scoring"]["score"] is None
