"""Entry point: registers the `gsm8k` task (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import TaskSpec


@hookimpl
def autorl_register_tasks() -> list[TaskSpec]:
    return [
        TaskSpec(
            name="gsm8k",
            factory="autorl_task_gsm8k.task:GSM8KTask",
            evaluator="exact",
            contract="autorl_task_gsm8k.kit",
            recipe="autorl_task_gsm8k:recipe",  # the scripted agent's reference recipe
            description="L1 grade-school math: exact match of the final number (greedy); "
            "offline gsm_symbolic split by default, real GSM8K with task option data_path",
            options={"level": "L1", "metric": "accuracy"},
        )
    ]
