"""Entry point: registers the `rollout` evaluator (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import EvaluatorSpec
from autorl_evaluator_rollout.contract import INTERACTIVE


@hookimpl
def autorl_register_evaluators() -> list[EvaluatorSpec]:
    return [
        EvaluatorSpec(
            name="rollout",
            factory="autorl_evaluator_rollout.evaluator:RolloutEvaluator",
            description="Interactive tasks: plays every eval session with the model, many "
            "episodes in lockstep with one batched generation per turn (success rate)",
            contract=INTERACTIVE,
            options={"metric": "success_rate", "decoding": "greedy", "level": "L3"},
        )
    ]
