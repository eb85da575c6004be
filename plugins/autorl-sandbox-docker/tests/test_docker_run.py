"""A whole ``autorl run --model tiny --sandbox docker`` through the real CLI: the scripted agent
trains and submits from inside the container, the run is scored and comparable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

AUTORL = str(Path(sys.executable).parent / "autorl")


def test_tiny_run_in_docker(tmp_path: Path, docker_engine: str) -> None:
    argv = [
        AUTORL, "run", "--task", "gsm8k", "--model", "tiny", "--sandbox", "docker",
        "--budget", "240", "--agent-option", "rounds=1", "--agent-option", "phase_seconds=8",
        "--task-option", "train_size=40", "--task-option", "eval_size=20",
        "--runs-dir", str(tmp_path / "runs"), "--run-id", "docker",
    ]  # fmt: skip
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    run_dir = tmp_path / "runs" / "docker"
    log = (run_dir / "agent.log").read_text() if (run_dir / "agent.log").exists() else ""
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:] + log[-2000:]
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["sandbox"]["name"] == "docker" and summary["comparable"] is True
    assert any(row["status"] == "scored" for row in summary["submissions"]), log[-2000:]
    run_info = json.loads((run_dir / "run.json").read_text())
    assert run_info["status"] == "completed" and run_info["agent_exit_code"] == 0, log[-2000:]
