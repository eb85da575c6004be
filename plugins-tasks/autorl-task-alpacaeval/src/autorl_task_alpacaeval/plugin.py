"""Entry point: registers the `alpacaeval` task (no heavy imports here)."""

from __future__ import annotations

from autorl_task_common.spec import task_spec

from autorl import hookimpl
from autorl.specs import TaskSpec


@hookimpl
def autorl_register_tasks() -> list[TaskSpec]:
    return [
        task_spec(
            "alpacaeval",
            "autorl_task_alpacaeval.task:AlpacaEvalTask",
            evaluator="judge",
            contract="autorl_task_alpacaeval.kit",
            level="L2",
            metric="length-controlled win rate",
            summary="instruction following: an LLM judge compares each answer with a reference "
            "answer (length-controlled win rate); offline split and scripted judge by "
            "default, the 805 AlpacaEval 2.0 prompts with task option data_path",
        )
    ]
