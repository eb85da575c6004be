"""Building a task's split into its cache once, atomically, under a name that says what it holds.

Every task prepares files (splits, a kit) into ``TaskContext.cache_dir`` and reuses them across
runs. The directory name carries a digest of what went into it (options, source files), and
:func:`build_once` writes into a staging directory that is renamed into place only when complete,
so a crash or two concurrent runs never leave half a split behind. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def params_digest(payload: Any) -> str:
    """16 hex digits of the JSON of ``payload`` (keys sorted; other objects by ``str``)."""
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def files_digest(paths: Iterable[Path]) -> str:
    """16 hex digits over the names and bytes of ``paths``, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as fh:
            for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:16]


def build_once(target: Path, build: Callable[[Path], None], marker: str = "meta.json") -> Path:
    """Run ``build(staging)`` unless ``target`` is complete (its ``marker`` exists), then move
    it into place, so a crash never leaves a half-written split."""
    if (target / marker).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        build(staging)
        if target.exists():
            shutil.rmtree(target)
        try:
            os.rename(staging, target)
        except OSError:  # another process finished first: its files are identical
            if not (target / marker).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
