"""`autorl run --task alfworld --model tiny` end to end through the real CLI: the scripted
agent's recipe (SFT on ALFWorld's expert, then online GRPO in the engine), the rollout
evaluator playing held-out games in the engine, real HTTP to the grader, the report. Small
options keep it bounded: 2 held-out games, 6 steps each, 16 train games, a short budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import autorl_agent_scripted.agent as scripted
import autorl_evaluator_rollout  # noqa: F401
import autorl_model_tiny  # noqa: F401
import pytest

AUTORL = str(Path(sys.executable).parent / "autorl")


@pytest.mark.slow
def test_tiny_run_completes_with_a_report(tmp_path: Path) -> None:
    if "alfworld" not in scripted.available_recipes():
        pytest.skip("the scripted agent has no alfworld recipe")
    env = {**os.environ, "AUTORL_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    env.pop("ALFWORLD_DATA", None)
    done = subprocess.run(
        [
            AUTORL,
            "run",
            "--task",
            "alfworld",
            "--model",
            "tiny",
            "--task-option",
            "eval_size=2",
            "--task-option",
            "max_steps=6",
            "--task-option",
            "train_size=16",
            "--agent-option",
            "sft_episodes=4",
            "--evaluator-option",
            "max_new_tokens=16",
            "--budget",
            "70",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--run-id",
            "alfworld",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run_dir = tmp_path / "runs" / "alfworld"
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["baseline_score"] is not None
    assert summary["submissions"], "the scripted agent submitted nothing"
    assert any(row["status"] == "scored" for row in summary["submissions"])
    workspace = run_dir / "workspace"
    assert (workspace / "kit" / "autorl_kit.py").is_file()
    assert not list(workspace.rglob("eval.jsonl")) and not list(workspace.rglob("eval_games"))
