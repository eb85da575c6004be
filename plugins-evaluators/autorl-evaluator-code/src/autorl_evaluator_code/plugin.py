"""Entry point: registers the `code` evaluator (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import EvaluatorSpec
from autorl_evaluator_code.contract import CODE


@hookimpl
def autorl_register_evaluators() -> list[EvaluatorSpec]:
    return [
        EvaluatorSpec(
            name="code",
            factory="autorl_evaluator_code.evaluator:CodeEvaluator",
            description="pass@1 / pass@k of generated Python code, each sample run against the "
            "problem's tests in its own sandboxed process (limits, no network, timeout)",
            contract=CODE,
        )
    ]
