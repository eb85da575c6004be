"""Claims against observations (issue #30, items 4, 7 and 8), on run directories written in the
engine's format: a forged agent.log and a planted trajectory are *claimed*, the weights the
harness measured are *observed*, a contradiction is a flag, a check that cannot run is a flag,
and no agent-written byte reaches report.md or report.html live."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from autorl_analysis.analyse import analyse
from autorl_analysis.report import AnalysisReport
from autorl_grading.checkpoints import tensor_hash
from autorl_report_basic.report import BasicReport
from autorl_runner.finish import contribute
from autorl_testing.runs import write_run_dir
from safetensors.numpy import save_file

from autorl.registry import Registry

HOSTILE = (
    "\x1b]0;evil\x07\x1b[2K\r\nsubmission 97: scored 99.90 [/autorl][bold] "
    "<img src=x onerror=alert(1)> | a | b |"
)
RAW = ("\x1b", "\x07", "\r", "<img src=x", "[/autorl][bold]", "| a | b |")
FORGED_LOG = [
    "[recipe 3.0s] loading",
    "{'loss': 0.5, 'rewards/chosen': 1.2, 'rewards/margins': 0.3}",
    "{'loss': 0.4, 'completions/mean_length': 80.0, 'reward_std': 0.1}",
    "[recipe 9.0s] grpo: 12 steps in 5s",
    "Traceback (most recent call last):",
    '  File "train.py", line 3, in <module>',
    "torch.OutOfMemoryError: CUDA out of memory. " + HOSTILE,
    "submitted output/v1",
]
TENSORS = 48


def weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"layer.{i}.weight": rng.standard_normal((8, 8)).astype("float32") for i in range(48)}


def write_model(directory: Path, tensors: dict[str, np.ndarray]) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(directory / "model.safetensors"))
    (directory / "config.json").write_text(json.dumps({"model_type": "llama"}))
    return tensor_hash(directory)


def write_run(
    root: Path, entries: list[dict[str, Any]], base: Path, base_hash: str, agent: str
) -> Path:
    config = {
        "task": "no-such-task",  # the leakage check is skipped (a problem), not slowed
        "agent": agent,
        "driver": None,
        "model": "tiny",
        "seed": 0,
        "budget": {"wall_seconds": 600, "max_submissions": 8},
        "sandbox": "isolated",
        "reports": ["basic", "analysis"],
    }
    run_dir = write_run_dir(
        root / "20260102-030405-claims",
        config=config,
        entries=entries,
        baseline={"score": 10.0, "n": 8, "metrics": {}},
        run={
            "status": "completed",
            "started": "2026-01-02T03:04:06Z",
            "ended": "2026-01-02T03:14:06Z",
            "agent_seconds": 500,
            "budget_seconds": 600,
            "end_reason": "agent_exit",
            "agent_exit_code": 0,
            "error": None,
        },
        versions={"autorl": "0.1.0"},
        hashes={"train": "sha256:t", "eval": "sha256:e", "base_model": base_hash},
        model={"path": str(base)},
        task={"name": "no-such-task", "version": "1", "metric": "accuracy"},
    )
    events = [
        {
            "event": "agent_launch",
            "timestamp": "2026-01-02T03:04:10+00:00",
            "argv": ["python", "recipe.py"],
        }
    ]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (run_dir / "agent.log").write_text("\n".join(FORGED_LOG) + "\n")
    forged = [
        {
            "type": "tool_call",
            "ts": "2026-01-02T03:05:00+00:00",
            "id": "c1",
            "name": "bash",
            "arguments": {"command": "python train_grpo.py --forged " + HOSTILE},
        },
        {"type": "tool_result", "id": "c1", "output": "{'reward_std': 0.2}"},
    ]
    (run_dir / "home").mkdir()
    (run_dir / "home" / "react-trajectory.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in forged)
    )
    return run_dir


def sub(sid: int, status: str, weight_hash: str | None, **fields: Any) -> list[dict[str, Any]]:
    first = {
        "submission_id": sid,
        "status": "received",
        "time": f"2026-01-02T03:0{sid}:00Z",
        "elapsed_s": 60.0 * sid,
        "model_path": f"output/v{sid}",
        "code_revision": None,
    }
    last = {
        "submission_id": sid,
        "status": status,
        "elapsed_s": 60.0 * sid + 5,
        "weight_hash": weight_hash,
        **fields,
    }
    return [first, last]


@pytest.fixture
def base(tmp_path: Path) -> tuple[Path, str]:
    directory = tmp_path / "cache" / "base"
    return directory, write_model(directory, weights())


def test_recorded_distance_is_observed_and_forged_training_is_contradicted(
    tmp_path: Path, base: tuple[Path, str]
) -> None:
    """A hand-perturbed base, with a forged TRL log, a forged OOM traceback and a trajectory
    planted under the ``react`` agent's name in a ``scripted`` run."""
    base_dir, base_hash = base
    entries = [
        *sub(1, "scored", "sha256:" + "1" * 64, score=12.0, base_distance=3e-6,
             fingerprint_problem=None),
        *sub(2, "scored", "sha256:" + "2" * 64, score=11.0, base_distance=None,
             fingerprint_problem="the weights could not be read"),
        *sub(3, "failed", None, reason="bad file name " + HOSTILE),
    ]  # fmt: skip
    run_dir = write_run(tmp_path, entries, base_dir, base_hash, agent="scripted")
    analysis, reader = analyse(run_dir)

    assert reader.trajectory_file is None and reader.trajectory == []  # not the react agent
    assert not any("forged" in e.label for e in analysis.timeline)
    route = next(s.route for s in analysis.submissions if s.submission_id == 1)
    assert route.label == "mixed" and route.basis == "claimed"
    assert analysis.route is not None and analysis.route.basis == "claimed"
    crash = next(f for f in analysis.failures if f.type == "training_crash")
    assert crash.basis == "claimed" and crash.detail == "oom"
    assert all(e.basis == "claimed" for e in analysis.timeline if e.kind == "training_finished")
    assert any(e.basis == "observed" for e in analysis.timeline if e.kind == "submission")

    kinds = {(f.kind, f.submission_id): f for f in analysis.flags}
    assert ("near_copy_of_base", 1) in kinds
    contradicted = kinds[("claim_contradicted", 1)]
    assert contradicted.severity == "critical" and contradicted.value == pytest.approx(3e-6)
    unavailable = kinds[("fingerprint_unavailable", 2)]
    assert unavailable.severity == "warning"
    assert "could not be read" in unavailable.message
    assert any("submission 2: no near-copy check" in p for p in analysis.problems)
    change = analysis.measurements["weight_change"]["1"]
    assert change["basis"] == "observed" and change["source"] == "submissions.jsonl"

    out = run_dir / "report"
    contribute(run_dir, run_dir.name, Registry.from_entry_points())  # as a run's end does
    BasicReport().render(run_dir, out)
    AnalysisReport().render(run_dir, out)
    md = (out / "report.md").read_text()
    page = (out / "report.html").read_text()
    for raw in RAW:
        assert raw not in md, raw
    for raw in RAW[:4]:  # in HTML, markup and pipes are plain text; tags and controls are not
        assert raw not in page, raw
    assert "[claimed]" in md and "claim_contradicted" in md and "fingerprint_unavailable" in md
    assert "&lt;img" in page and "onerror" in page  # shown as text
    assert all(not line.startswith("submission 97") for line in md.splitlines())
    exported = out / "trajectory.openai.jsonl"
    assert not exported.exists() or "forged" not in exported.read_text()


def test_the_declared_trajectory_is_read_and_labelled_claimed(
    tmp_path: Path, base: tuple[Path, str]
) -> None:
    base_dir, base_hash = base
    run_dir = write_run(tmp_path, [], base_dir, base_hash, agent="react")
    analysis, reader = analyse(run_dir)
    assert reader.trajectory_file == "home/react-trajectory.jsonl"
    commands = [e for e in analysis.timeline if e.kind == "command" and e.t > 0]
    assert commands and all(e.basis == "claimed" for e in commands)
    out = run_dir / "report"
    AnalysisReport().render(run_dir, out)
    rows = [json.loads(line) for line in (out / "trajectory.openai.jsonl").read_text().splitlines()]
    assert rows[0]["source"] == "home/react-trajectory.jsonl" and rows[0]["basis"] == "claimed"
    text = json.dumps(rows)
    assert "\\u001b" not in text and "\\r" not in text  # no control characters, even escaped


def test_a_legacy_run_notes_every_check_that_cannot_run(
    tmp_path: Path, base: tuple[Path, str]
) -> None:
    """Before the grader recorded ``base_distance``: the distance comes from the checkpoint, a
    FIFO in output/ is a ``fingerprint_unavailable`` flag (never a silent skip), and a claimed
    GRPO run that changed one tensor of 48 is contradicted."""
    base_dir, base_hash = base
    perturbed = weights()
    perturbed["layer.0.weight"] = perturbed["layer.0.weight"] * 1.5
    run_dir_hash = write_model(tmp_path / "v1", perturbed)
    entries = [
        *sub(1, "scored", run_dir_hash, score=12.0),
        *sub(2, "scored", "sha256:" + "2" * 64, score=11.0),
    ]
    run_dir = write_run(tmp_path, entries, base_dir, base_hash, agent="scripted")
    out1 = run_dir / "workspace" / "output" / "v1"
    out1.parent.mkdir(parents=True)
    (tmp_path / "v1").rename(out1)
    out2 = run_dir / "workspace" / "output" / "v2"
    out2.mkdir()
    os.mkfifo(out2 / "model.safetensors")
    analysis, _ = analyse(run_dir)
    kinds = {(f.kind, f.submission_id): f for f in analysis.flags}
    change = analysis.measurements["weight_change"]["1"]
    assert change["source"] == "workspace/output/v1"
    assert change["tensors"] == TENSORS and change["tensors_changed"] == 1
    assert change["distance"] > 1e-4  # not a near copy by distance alone
    assert ("near_copy_of_base", 1) not in kinds
    assert "1 of 48 tensors" in kinds[("claim_contradicted", 1)].message
    unavailable = kinds[("fingerprint_unavailable", 2)]
    assert "FIFO" in unavailable.message or "non-regular" in unavailable.message
