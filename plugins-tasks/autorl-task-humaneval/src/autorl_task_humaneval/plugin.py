"""Entry point: registers the `humaneval` task (no heavy imports here)."""

from __future__ import annotations

from autorl_task_common.spec import task_spec

from autorl import hookimpl
from autorl.specs import TaskSpec


@hookimpl
def autorl_register_tasks() -> list[TaskSpec]:
    return [
        task_spec(
            "humaneval",
            "autorl_task_humaneval.task:HumanEvalTask",
            evaluator="code",
            contract="autorl_task_humaneval.kit",
            level="L1",
            metric="pass@1",
            summary="Python code generation: pass@1 of the generated function against the "
            "problem's tests (sandboxed); first 82 HumanEval problems train, last 82 held "
            "out",
        )
    ]
