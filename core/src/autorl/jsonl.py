"""Reading a JSON-lines file (a split, a call log, a trajectory): one parse, one error format.

A bad line is reported the same way wherever it is read: the file, the line number and what the
JSON parser said, as the error type the caller's own errors use.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError


def json_lines(
    path: str | Path, error: Callable[[str], Exception] = ConfigError
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of ``path`` (gzip-compressed when it
    ends in ``.gz``); a line that is not JSON raises ``error("<path>:<line>: not valid JSON")``."""
    opener = gzip.open if Path(path).suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            yield number, value
