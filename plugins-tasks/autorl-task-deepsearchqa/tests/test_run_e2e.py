"""`autorl run --task deepsearchqa --model tiny` end to end through the real CLI: the scripted
agent's recipe (SFT on the kit's expert episodes, then online GRPO), the rollout evaluator,
real HTTP to the grader, the report. Small options keep it bounded (4 held-out questions)."""

from __future__ import annotations

from pathlib import Path

import autorl_agent_scripted.agent as scripted
import autorl_evaluator_rollout  # noqa: F401
import autorl_model_tiny  # noqa: F401
import pytest
from autorl_testing.runs import autorl_run, completed_summary


@pytest.mark.slow
def test_tiny_run_completes_with_a_report(tmp_path: Path) -> None:
    if "deepsearchqa" not in scripted.available_recipes():
        pytest.skip("the scripted agent has no deepsearchqa recipe")
    autorl_run(
        tmp_path, "dsqa", task="deepsearchqa", model="tiny", task_option="eval_size=4",
        evaluator_option="batch_size=4", agent_option="phase_seconds=10",
        budget=240, timeout=540,  # a guard: the phases are capped, a busy host still submits
    )  # fmt: skip
    run_dir = tmp_path / "runs" / "dsqa"
    completed_summary(run_dir)
    assert (run_dir / "report" / "report.md").read_text().strip()
    workspace = run_dir / "workspace"
    assert (workspace / "kit" / "autorl_kit.py").is_file()
    assert not list(workspace.rglob("eval.jsonl")) and not list(workspace.rglob("records"))
