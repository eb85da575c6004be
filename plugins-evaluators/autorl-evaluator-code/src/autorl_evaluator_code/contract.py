"""The ``code`` contract the ``code`` evaluator consumes: what a task provides so that a function
is completed by the model and run against its tests. A task's ``contract`` module implements
:class:`CodeContract`; its eval rows hold ``task_id``, ``prompt``, ``test``, ``entry_point``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from autorl.contracts import ContractKind

Messages = list[dict[str, str]]


class CodeContract(Protocol):
    """``code``: a function to complete, run against tests. Optional: ``STOP_SEQUENCES``
    (strings that end a completion)."""

    def build_prompt(self, problem: Mapping[str, Any]) -> str | Messages: ...
    def extract_code(self, completion: str, problem: Mapping[str, Any]) -> str: ...


CODE = ContractKind(
    "code",
    CodeContract,
    optional=("STOP_SEQUENCES",),
    row_fields=("task_id", "prompt", "test", "entry_point"),
    summary="a function to complete, run against its tests",
)
