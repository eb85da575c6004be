"""The ``judge`` contract the ``judge`` evaluator consumes: what a task provides so that an
instruction answered by the model is compared by a judge with a reference answer. A task's
``contract`` module implements :class:`JudgeContract`; its eval rows hold ``instruction`` and
``reference``."""

from __future__ import annotations

from typing import Protocol

from autorl.contracts import ContractKind

Messages = list[dict[str, str]]


class JudgeContract(Protocol):
    """``judge``: an instruction answered, judged against a reference."""

    def build_messages(self, instruction: str) -> Messages: ...


JUDGE = ContractKind(
    "judge",
    JudgeContract,
    row_fields=("instruction", "reference"),
    summary="an instruction answered, judged against a reference",
)
