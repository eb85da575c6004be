"""Entry point: registers the `gsm8k` task (no heavy imports here)."""

from __future__ import annotations

from autorl_task_common.spec import task_spec

from autorl import hookimpl
from autorl.specs import TaskSpec


@hookimpl
def autorl_register_tasks() -> list[TaskSpec]:
    return [
        task_spec(
            "gsm8k",
            "autorl_task_gsm8k.task:GSM8KTask",
            evaluator="exact",
            contract="autorl_task_gsm8k.kit",
            level="L1",
            metric="accuracy",
            summary="grade-school math: exact match of the final number (greedy); offline "
            "gsm_symbolic split by default, real GSM8K with task option data_path",
        )
    ]
