"""`autorl run --task webshop --model tiny` end to end through the real CLI: the WebShop task,
the rollout evaluator (baseline and submissions), the scripted agent's recipe, the report.

Small options keep it bounded: 8 eval sessions of at most 5 steps, 24 new tokens per reply,
16 train sessions, SFT on 4 expert episodes, a 90 s budget.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from autorl_testing.runs import run_cache

E2E = Path(__file__).with_name("test_run_e2e.py")
_spec = importlib.util.spec_from_file_location("autorl_tests_run_e2e", E2E)
assert _spec is not None and _spec.loader is not None
run_e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_e2e)
AUTORL, HARNESS_RECORDS = run_e2e.AUTORL, run_e2e.HARNESS_RECORDS
EVAL_SIZE = 8
RL_GAIN = Path(__file__).resolve().parents[1] / "bench" / "rl_gain.py"


def _needs_the_stack() -> None:
    from autorl_agent_scripted.agent import available_recipes

    assert "webshop" in available_recipes(), "autorl-task-webshop ships no scripted recipe"


@pytest.fixture(scope="module")
def webshop_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    _needs_the_stack()
    root = tmp_path_factory.mktemp("webshop")
    env = {**os.environ, "AUTORL_CACHE": str(run_cache(root)), "HF_HUB_OFFLINE": "1"}
    started = time.monotonic()
    done = subprocess.run(
        [
            AUTORL,
            "run",
            "--task",
            "webshop",
            "--model",
            "tiny",
            "--task-option",
            f"eval_size={EVAL_SIZE}",
            "--task-option",
            "max_steps=5",
            "--task-option",
            "train_size=16",
            "--agent-option",
            "sft_episodes=4",
            "--agent-option",
            "phase_seconds=10",  # the budget is the guard: the run, not the training, is tested
            "--evaluator-option",
            "max_new_tokens=24",
            "--budget",
            "90",
            "--runs-dir",
            str(root / "runs"),
            "--run-id",
            "webshop",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return {"proc": done, "seconds": time.monotonic() - started, "run_dir": root / "runs/webshop"}


@pytest.mark.slow
def test_the_run_completes_with_a_rollout_baseline_and_a_report(webshop_run: dict) -> None:
    proc = webshop_run["proc"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir: Path = webshop_run["run_dir"]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["task"]["evaluator"] == "rollout"
    assert manifest["task"]["evaluator_config"]["max_new_tokens"] == 24
    baseline = json.loads((run_dir / "baseline.json").read_text())
    sizes = manifest["task"]["split_sizes"]  # the held-out sessions, split into dev and test
    assert sizes["dev"] + sizes["test"] == EVAL_SIZE
    assert baseline["n"] == sizes["dev"] and 0.0 <= baseline["score"] <= 100.0
    metrics = baseline["metrics"]
    assert metrics["n_episodes"] == sizes["dev"] and 1 <= metrics["mean_steps"] <= 5
    assert {"success_rate", "mean_reward", "invalid_action_rate", "episodes_per_second"} <= set(
        metrics
    )
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["baseline_score"] == baseline["score"]
    assert (run_dir / "report" / "report.md").read_text().strip()


@pytest.mark.slow
def test_trajectories_stay_with_the_harness(webshop_run: dict) -> None:
    run_dir: Path = webshop_run["run_dir"]
    trajectories = run_dir / "baseline" / "trajectories.jsonl"
    episodes = [json.loads(line) for line in trajectories.read_text().splitlines()]
    held_out = [f"eval-{i:04d}" for i in range(EVAL_SIZE)]
    dev = json.loads((run_dir / "manifest.json").read_text())["task"]["split_sizes"]["dev"]
    # the baseline plays the dev sessions only (the rest are sealed for the final test)
    assert len(episodes) == dev and {e["session_id"] for e in episodes} <= set(held_out)
    assert all(e["done"] and 1 <= e["steps"] <= 5 for e in episodes)
    workspace = run_dir / "workspace"
    assert (workspace / "kit" / "autorl_kit.py").is_file()
    eval_ids = held_out
    for path in workspace.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        assert path.name not in HARNESS_RECORDS | {"trajectories.jsonl"}, path
        if path.stat().st_size < 5_000_000:
            text = path.read_text(errors="replace")
            assert not any(sid in text for sid in eval_ids), path


@pytest.mark.slow
def test_submissions_are_scored_by_the_rollout_evaluator(webshop_run: dict) -> None:
    run_dir: Path = webshop_run["run_dir"]
    log = [json.loads(line) for line in (run_dir / "submissions.jsonl").read_text().splitlines()]
    scored = [e for e in log if e["status"] == "scored" and not e.get("copy_of_base")]
    assert scored, f"no submission was scored: {[e['status'] for e in log]}"
    dev = json.loads((run_dir / "manifest.json").read_text())["task"]["split_sizes"]["dev"]
    assert all(e["metrics"]["n_episodes"] == dev for e in scored if "metrics" in e)
    assert webshop_run["seconds"] < 400, webshop_run["seconds"]


@pytest.mark.slow
def test_the_rl_gain_bench_pairs_the_first_and_last_submission(
    webshop_run: dict, tmp_path: Path
) -> None:
    """``bench/rl_gain.py`` (issue #33 item 8) on this run: v1 and v2 are the first and last
    valid submissions' recorded dev scores, their difference is the mean of the sessions'
    paired differences, read from the harness's trajectories."""
    from autorl_records.records import load_run

    run_dir: Path = webshop_run["run_dir"]
    submissions = load_run(run_dir).submissions
    valid = sorted((s for s in submissions if s.valid), key=lambda s: s.submission_id)
    assert len(valid) >= 2, [s.status for s in submissions]
    # the submission log names each scored evaluation's per-session file, inside the run
    for sub in valid:
        if sub.status == "scored":
            assert (run_dir / sub.fields["details"]).is_file(), sub.fields.get("details")
    out = tmp_path / "gain.json"
    done = subprocess.run(
        [sys.executable, str(RL_GAIN), str(run_dir), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = json.loads(out.read_text())["runs"]
    dev = json.loads((run_dir / "manifest.json").read_text())["task"]["split_sizes"]["dev"]
    assert row["sessions"] == dev
    assert row["v1"] == pytest.approx(valid[0].score) and row["v2"] == pytest.approx(
        valid[-1].score
    )
    assert row["diff"] == pytest.approx(row["v2"] - row["v1"])
    assert row["se"] >= 0 and "v2 - v1 =" in done.stdout
