"""Entry point: registers the `webshop` task (no heavy imports here)."""

from __future__ import annotations

from autorl_task_common.spec import task_spec

from autorl import hookimpl
from autorl.specs import TaskSpec


@hookimpl
def autorl_register_tasks() -> list[TaskSpec]:
    return [
        task_spec(
            "webshop",
            "autorl_task_webshop.task:WebShopTask",
            evaluator="rollout",
            contract="autorl_task_webshop.protocol_compact",  # offline; see task.CONTRACTS
            level="L3",
            metric="success_rate",
            summary="interactive shopping (WebShop-compatible): search and click to buy the "
            "instructed product; success = reward >= 0.5 over 100 held-out sessions; "
            "shipped 1,000-product catalogue, official WebShop files with task option "
            "data_path",
        )
    ]
