"""Entry point: registers the `alfworld` task (no heavy imports here)."""

from __future__ import annotations

from autorl_task_common.spec import task_spec

from autorl import hookimpl
from autorl.specs import TaskSpec


@hookimpl
def autorl_register_tasks() -> list[TaskSpec]:
    return [
        task_spec(
            "alfworld",
            "autorl_task_alfworld.task:AlfWorldTask",
            evaluator="rollout",
            contract="autorl_task_alfworld.protocol",
            level="L3",
            metric="success_rate",
            summary="interactive household text games in the real ALFWorld engine: success rate "
            "over held-out games (ReAct prompt, 50 steps, greedy); shipped generated "
            "games, the official 134 valid_unseen games with data_path",
        )
    ]
