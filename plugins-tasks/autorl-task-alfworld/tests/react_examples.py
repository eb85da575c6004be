"""A synthetic ReAct examples file for tests: the key structure of the ReAct repository's
prompts/alfworld_3prompts.json (react_/act_ x six task keys x 0-2), none of its text."""

from __future__ import annotations

import json
from pathlib import Path

KEYS = ("put", "clean", "heat", "cool", "examine", "puttwo")


def write_examples(path: Path, drop: str | None = None) -> Path:
    """Write the file at ``path`` (without the key ``drop``); each example ends with a newline,
    as the real ones do."""
    examples = {
        f"{style}_{key}_{i}": f"<{style} {key} {i}>\n> go to x {i}\nOK.\n"
        for style in ("react", "act")
        for key in KEYS
        for i in range(3)
    }
    examples.pop(drop, None)
    path.write_text(json.dumps(examples), encoding="utf-8")
    return path
