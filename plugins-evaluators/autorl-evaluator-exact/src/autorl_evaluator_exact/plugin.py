"""Entry point: registers the `exact` evaluator (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import EvaluatorSpec
from autorl_evaluator_exact.contract import ANSWER


@hookimpl
def autorl_register_evaluators() -> list[EvaluatorSpec]:
    return [
        EvaluatorSpec(
            name="exact",
            factory="autorl_evaluator_exact.evaluator:ExactMatchEvaluator",
            description="Greedy generation, final-answer extraction, exact match (percent "
            "correct); prompt, extraction and normal form from the task's 'answer' contract",
            contract=ANSWER,
            options={"metric": "accuracy", "decoding": "greedy"},
        )
    ]
