"""The ``answer`` contract the ``exact`` evaluator consumes: what a task provides so that one
question gets one final answer, checked by exact match. A task's ``contract`` module implements
:class:`AnswerContract`; its eval rows hold ``question`` and ``answer`` (strings)."""

from __future__ import annotations

from typing import Protocol

from autorl.contracts import ContractKind

Messages = list[dict[str, str]]


class AnswerContract(Protocol):
    """``answer``: one question, one final answer, exact match. Optional:
    ``has_final_answer_line(text)`` (the report's format rate)."""

    def build_messages(self, question: str) -> Messages: ...
    def extract_answer(self, text: str) -> str | None: ...
    def normalize(self, answer: str) -> str | None: ...


ANSWER = ContractKind(
    "answer",
    AnswerContract,
    optional=("has_final_answer_line",),
    row_fields=("question", "answer"),
    summary="one question, one final answer, exact match",
)
