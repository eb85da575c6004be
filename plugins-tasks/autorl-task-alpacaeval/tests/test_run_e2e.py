"""`autorl run --task alpacaeval --model tiny --agent scripted` through the real CLI: baseline
judged by the shipped scripted judge, the scripted recipe trains (LoRA SFT) and submits, the
grader judges the submission, and the report says who judged and what it cost."""

from __future__ import annotations

import json
import time
from pathlib import Path

import autorl_agent_scripted  # noqa: F401
import autorl_model_tiny  # noqa: F401
import pytest
from autorl_testing.runs import autorl_run

EVAL_SIZE = 16

pytestmark = pytest.mark.slow  # ~40 s on an idle 2-core machine; minutes under load


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("alpacaeval-e2e")
    started = time.monotonic()
    done = autorl_run(
        root, "ae", task="alpacaeval", model="tiny", agent="scripted",
        budget=150,  # a cap: the recipe exits after its one short round
        task_option=f"eval_size={EVAL_SIZE}", evaluator_option="max_new_tokens=48",
        agent_option=["rounds=1", "epochs=0.25"], check=False,
    )  # fmt: skip
    return {"proc": done, "seconds": time.monotonic() - started, "run_dir": root / "runs" / "ae"}


def test_the_run_completes_and_a_submission_is_judged(run: dict) -> None:
    proc = run["proc"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir: Path = run["run_dir"]
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["task"] == "alpacaeval" and summary["metric"] == "length-controlled win rate"
    assert summary["baseline_score"] is not None
    assert any(row["status"] == "scored" for row in summary["submissions"]), summary
    agent_log = (run_dir / "agent.log").read_text()
    assert "round 1/1: SFT" in agent_log and "submitted output/v1" in agent_log


def test_judge_metrics_are_recorded_and_reported(run: dict) -> None:
    run_dir: Path = run["run_dir"]
    baseline = json.loads((run_dir / "baseline.json").read_text())
    m = baseline["metrics"]
    # every submission and the dev baseline are judged on the dev half of the held-out split
    sizes = json.loads((run_dir / "manifest.json").read_text())["task"]["split_sizes"]
    dev = sizes["dev"]
    assert sizes["dev"] + sizes["test"] == EVAL_SIZE and baseline["n"] == dev
    assert m["judge"] == "scripted/alpacaeval_judge_v1.yaml" and m["judge_scripted"] is True
    assert m["judge_calls"] + m["judge_cached"] == dev
    assert m["judge_cost_usd"] == 0.0
    assert baseline["score"] == pytest.approx(m["lc_win_rate"])
    scored = [
        json.loads(line)
        for line in (run_dir / "submissions.jsonl").read_text().splitlines()
        if '"scored"' in line
    ]
    assert (
        scored and scored[0]["metrics"]["judge_calls"] + scored[0]["metrics"]["judge_cached"] == dev
    )
    calls = (run_dir / "baseline" / "judge_calls.jsonl").read_text().splitlines()
    assert len(calls) == m["judge_calls"]
    report = (run_dir / "report" / "report.md").read_text()
    # Markdown-escaped in report.md (it renders as scripted/alpacaeval_judge_v1.yaml)
    assert "## Judge" in report and "scripted/alpacaeval\\_judge\\_v1.yaml" in report
    assert "the judge was **scripted**" in report


def test_nothing_of_the_grader_reaches_the_workspace(run: dict) -> None:
    workspace: Path = run["run_dir"] / "workspace"
    names = {p.name for p in workspace.rglob("*")}
    assert "eval.jsonl" not in names and "details.jsonl" not in names
    assert not any(n.endswith(".yaml") and "judge" in n for n in names)
    assert not any("judge-cache" in str(p) for p in workspace.rglob("*"))
    train = (workspace / "data" / "train.jsonl").read_text()
    evals = run["run_dir"] / "baseline" / "details.jsonl"
    for row in map(json.loads, evals.read_text().splitlines()):
        assert row["instruction"] not in train
    assert "scripted" in (workspace / "description.md").read_text()
