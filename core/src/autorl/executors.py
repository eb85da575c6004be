"""The built-in ``local`` executor: runs a matrix of runs one after another."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class SerialExecutor:
    name = "local"

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        return [fn(item) for item in items]
