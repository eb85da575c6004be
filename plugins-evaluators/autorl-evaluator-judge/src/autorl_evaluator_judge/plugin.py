"""Entry point: registers the `judge` evaluator (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import EvaluatorSpec
from autorl_evaluator_judge.contract import JUDGE


@hookimpl
def autorl_register_evaluators() -> list[EvaluatorSpec]:
    return [
        EvaluatorSpec(
            name="judge",
            factory="autorl_evaluator_judge.evaluator:JudgeEvaluator",
            description="Greedy answers judged pairwise against reference answers by an LLM "
            "driver (AlpacaEval 2.0 prompt); length-controlled win rate (percent)",
            contract=JUDGE,
            options={"metric": "length-controlled win rate", "decoding": "greedy"},
        )
    ]
