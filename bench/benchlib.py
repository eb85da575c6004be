"""What the benchmark scripts share: a registry model materialised into the cache, and the
JSON summary they may write."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def registry_model(name: str) -> Path | None:
    """The local directory of registry model ``name`` (``autorl list model``), materialised
    into ``$AUTORL_CACHE/models``; None after printing why when it cannot be had."""
    from autorl.errors import AutorlError
    from autorl.paths import cache_dir
    from autorl.registry import get_registry

    try:
        return Path(get_registry().create("model", name).materialize(cache_dir("models")).path)
    except AutorlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def write_json(path: Path | None, summary: dict[str, Any]) -> None:
    """``--json PATH``: the numbers, for a script that compares runs."""
    if path is not None:
        path.write_text(json.dumps(summary, indent=2) + "\n")
