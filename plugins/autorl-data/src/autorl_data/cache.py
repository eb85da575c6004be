"""Building a task's split into its cache once, atomically, under a name that says what it holds.

Every task prepares files (splits, a kit) into ``TaskContext.cache_dir`` and reuses them across
runs. The directory name carries a digest of what went into it (options, source files), and
:func:`build_once` writes into a staging directory that is renamed into place only when complete,
so a crash or two concurrent runs never leave half a split behind. Standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from autorl.digest import file_digest, json_digest, short


def params_digest(payload: Any) -> str:
    """16 hex digits of :func:`autorl.digest.json_digest` (for a directory name)."""
    return short(json_digest(payload))


def files_digest(paths: Iterable[Path]) -> str:
    """16 hex digits of :func:`autorl.digest.file_digest`: the files' names and bytes."""
    return short(file_digest(paths))


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


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """One JSON object a line (UTF-8, non-ASCII kept): the format of every split."""
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_split(
    staging: Path, train: list[dict[str, Any]], evals: list[dict[str, Any]], params: dict
) -> None:
    """``train.jsonl``, ``eval.jsonl`` and ``meta.json`` (the params and both sizes, written
    last: :func:`build_once`'s marker)."""
    write_jsonl(staging / "train.jsonl", train)
    write_jsonl(staging / "eval.jsonl", evals)
    meta = {**params, "n_train": len(train), "n_eval": len(evals)}
    (staging / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def read_meta(split_dir: Path) -> dict[str, Any]:
    """A built split's ``meta.json`` (what :func:`write_split` wrote: its parameters,
    ``n_train`` and ``n_eval``)."""
    return json.loads((split_dir / "meta.json").read_text(encoding="utf-8"))
