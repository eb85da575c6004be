"""`autorl run --task alfworld --model tiny` end to end through the real CLI: the scripted
agent's recipe (SFT on ALFWorld's expert, then online GRPO in the engine), the rollout
evaluator playing held-out games in the engine, real HTTP to the grader, the report. Small
options keep it bounded: 2 held-out games, 6 steps each, 16 train games, a short budget."""

from __future__ import annotations

from pathlib import Path

import autorl_agent_scripted.agent as scripted
import autorl_evaluator_rollout  # noqa: F401
import autorl_model_tiny  # noqa: F401
import pytest
from autorl_testing.runs import autorl_run, completed_summary


@pytest.mark.slow
def test_tiny_run_completes_with_a_report(tmp_path: Path) -> None:
    if "alfworld" not in scripted.available_recipes():
        pytest.skip("the scripted agent has no alfworld recipe")
    options = ["eval_size=2", "max_steps=6", "train_size=16"]
    autorl_run(
        tmp_path, "alfworld", task="alfworld", model="tiny", task_option=options,
        agent_option=["sft_episodes=4", "phase_seconds=10"], evaluator_option="max_new_tokens=16",
        budget=240,  # a guard: the phases are capped, a busy host still gets its submissions
        env={"ALFWORLD_DATA": None}, timeout=540,
    )  # fmt: skip
    run_dir = tmp_path / "runs" / "alfworld"
    completed_summary(run_dir)
    workspace = run_dir / "workspace"
    assert (workspace / "kit" / "autorl_kit.py").is_file()
    assert not list(workspace.rglob("eval.jsonl")) and not list(workspace.rglob("eval_games"))
