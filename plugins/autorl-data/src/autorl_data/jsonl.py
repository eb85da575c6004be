"""Reading the JSON-lines splits that tasks write and evaluators read.

One reader, so every evaluator reports a malformed split the same way: the file, the line and
what is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl.jsonl import json_lines


def read_jsonl(
    path: Path,
    *,
    required: Sequence[str],
    what: str = "example",
    valid: Callable[[Any], bool] = lambda value: value is not None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Rows of ``path`` (blank lines skipped); each must hold ``required`` fields that pass
    ``valid``. Raises :class:`ConfigError` naming the file and line of the first bad row."""
    rows: list[dict[str, Any]] = []
    for number, row in json_lines(path):
        if not isinstance(row, dict):
            raise ConfigError(f"{path}:{number}: expected a JSON object per line")
        missing = [f for f in required if not valid(row.get(f))]
        if missing:
            fields = " and ".join(repr(f) for f in missing)
            raise ConfigError(f"{path}:{number}: an eval {what} needs {fields}")
        rows.append(row)
    if not rows:
        raise ConfigError(f"{path}: the eval split holds no {what}")
    return rows[:limit] if limit else rows
