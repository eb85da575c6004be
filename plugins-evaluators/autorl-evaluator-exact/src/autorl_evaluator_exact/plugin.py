"""Entry point: registers the `exact` evaluator (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import EvaluatorSpec


@hookimpl
def autorl_register_evaluators() -> list[EvaluatorSpec]:
    return [
        EvaluatorSpec(
            name="exact",
            factory="autorl_evaluator_exact.evaluator:ExactMatchEvaluator",
            description="Greedy generation, final-number extraction, exact match (percent "
            "correct); prompt and extraction from the task's protocol module",
            options={"metric": "accuracy", "decoding": "greedy"},
        )
    ]
