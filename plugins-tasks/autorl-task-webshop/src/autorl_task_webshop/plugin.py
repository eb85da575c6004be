"""Entry point: registers the `webshop` task (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import TaskSpec


@hookimpl
def autorl_register_tasks() -> list[TaskSpec]:
    return [
        TaskSpec(
            name="webshop",
            factory="autorl_task_webshop.task:WebShopTask",
            evaluator="rollout",
            contract="autorl_task_webshop.protocol_compact",  # offline; see task.CONTRACTS
            recipe="autorl_task_webshop:recipe",  # the scripted agent's reference recipe
            description="L3 interactive shopping (WebShop-compatible): search and click to buy "
            "the instructed product; success = reward >= 0.5 over 100 held-out sessions; "
            "shipped 1,000-product catalogue, official WebShop files with task option data_path",
            options={"level": "L3", "metric": "success_rate"},
        )
    ]
