"""kill -9 the harness mid-run: nothing of the agent survives; ``autorl run --resume`` finishes
the run with no submission lost, recorded scores kept, pending ones graded as an uninterrupted
run would grade them, and a report that says it resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from autorl_sandbox_isolated.sandbox import bwrap_path
from autorl_testing.sandbox import cgroups_gone, sandbox_cgroups

AUTORL = str(Path(sys.executable).parent / "autorl")
pytestmark = [
    pytest.mark.e2e,  # real runs, killed and resumed
    pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap not installed"),
]


def _statuses(log: Path) -> dict[int, str]:
    found: dict[int, str] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            found[entry["submission_id"]] = entry["status"]
    return found


def _agent_processes(workspace: Path) -> list[int]:
    alive = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.cwd().startswith(str(workspace)) and proc.status() != "zombie":
                alive.append(proc.pid)
        except psutil.Error:
            continue
    return alive


def test_harness_killed_mid_evaluation_then_resumed(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "r"
    argv = [
        AUTORL, "run", "--model", "tiny", "--task", "gsm8k", "--budget", "90",
        "--task-option", "train_size=40", "--task-option", "eval_size=20",
        "--runs-dir", str(tmp_path / "runs"), "--run-id", "r", "--keep-checkpoints", "--quiet",
    ]  # fmt: skip
    stale = sandbox_cgroups("r")  # left by an older version or another run named "r"
    harness = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = run_dir / "submissions.jsonl"
    deadline = time.monotonic() + 240
    while "evaluating" not in _statuses(log).values():
        assert harness.poll() is None, "the run ended before a submission was evaluated"
        assert time.monotonic() < deadline, "no evaluation started in 240 s"
        time.sleep(0.1)
    os.kill(harness.pid, signal.SIGKILL)
    harness.wait()
    before = _statuses(log)
    pending = [sid for sid, status in before.items() if status not in {"scored", "failed"}]
    assert pending, before
    scored_before = {
        e["submission_id"]: e["score"]
        for e in map(json.loads, log.read_text().splitlines())
        if e["status"] == "scored"
    }
    time.sleep(1.0)
    assert _agent_processes(run_dir / "workspace") == [], "the agent outlived the harness"
    assert cgroups_gone("r", stale) == [], "the sandbox's cgroup outlived the harness"
    heartbeat = json.loads((run_dir / "run.json").read_text())  # the dead harness's last word
    assert heartbeat["status"] == "running" and heartbeat["pid"] == harness.pid
    assert heartbeat["agent_seconds"] is not None and heartbeat["end_reason"] is None

    done = subprocess.run([AUTORL, "run", "--resume", str(run_dir)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "completed" and info["end_reason"] == "harness_stopped"
    assert info["agent_seconds"] == heartbeat["agent_seconds"]  # from the record, not re-derived
    assert sorted(info["resumed"]["evaluated"]) == sorted(pending)
    after = _statuses(log)
    assert set(after) == set(before), "a submission was lost"
    assert all(status in {"scored", "failed", "duplicate"} for status in after.values()), after
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    for sid, score in scored_before.items():  # recorded scores are kept, never re-evaluated
        assert [e["score"] for e in entries if e["submission_id"] == sid and "score" in e] == [
            score
        ]

    # a pending one graded as an uninterrupted run grades it: the same evaluator, checkpoint, data
    from autorl_evaluator_exact.contract import ANSWER

    from autorl.contracts import load_contract
    from autorl.registry import get_registry
    from autorl.types import EvalRequest

    manifest = json.loads((run_dir / "manifest.json").read_text())
    task = manifest["task"]
    evaluator = get_registry().create("evaluator", task["evaluator"])
    sid = pending[0]
    resumed = next(e for e in reversed(entries) if e["submission_id"] == sid)
    assert resumed["status"] == "scored", resumed
    direct = evaluator.evaluate(
        EvalRequest(
            model_dir=run_dir / "submissions" / str(sid) / "checkpoint",
            eval_path=_eval_path(manifest),
            config=task["evaluator_config"],
            work_dir=tmp_path / "direct",
            seed=manifest["config"]["seed"],
            contract=load_contract(ANSWER, task["contract"]),  # as the manifest recorded it
        )
    )
    assert direct.score == resumed["score"]

    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["resumed"]["evaluated"] == info["resumed"]["evaluated"]
    assert "Resumed at" in (run_dir / "report" / "report.md").read_text()
    again = subprocess.run(
        [AUTORL, "run", "--resume", str(run_dir)], capture_output=True, text=True
    )
    assert again.returncode != 0 and "already completed" in again.stderr


def _eval_path(manifest: dict) -> Path:
    """The run's eval split, prepared again from the cache exactly as the run prepared it."""
    from autorl.paths import cache_dir
    from autorl.registry import get_registry
    from autorl.types import TaskContext

    config = manifest["config"]
    task = get_registry().create("task", config["task"])
    prepared = task.prepare(
        TaskContext(
            cache_dir=cache_dir("tasks", task.name, str(task.version)),
            seed=config["seed"],
            options=config["task_options"],
        )
    )
    return prepared.eval_path
