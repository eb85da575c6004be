"""Entry point: registers the `humaneval` task (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import TaskSpec


@hookimpl
def autorl_register_tasks() -> list[TaskSpec]:
    return [
        TaskSpec(
            name="humaneval",
            factory="autorl_task_humaneval.task:HumanEvalTask",
            evaluator="code",
            contract="autorl_task_humaneval.kit",
            recipe="autorl_task_humaneval:recipe",  # the scripted agent's reference recipe
            description="L1 Python code generation: pass@1 of the generated function against the "
            "problem's tests (sandboxed); first 82 HumanEval problems train, last 82 held out",
            options={"level": "L1", "metric": "pass@1"},
        )
    ]
