"""Entry point: registers the `alfworld` task (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import TaskSpec


@hookimpl
def autorl_register_tasks() -> list[TaskSpec]:
    return [
        TaskSpec(
            name="alfworld",
            factory="autorl_task_alfworld.task:AlfWorldTask",
            evaluator="rollout",
            contract="autorl_task_alfworld.protocol",
            recipe="autorl_task_alfworld:recipe",  # the scripted agent's reference recipe
            description="L3 interactive household text games in the real ALFWorld engine: "
            "success rate over held-out games (ReAct prompt, 50 steps, greedy); shipped "
            "generated games, the official 134 valid_unseen games with data_path",
            options={"level": "L3", "metric": "success_rate"},
        )
    ]
