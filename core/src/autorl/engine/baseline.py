"""The base model's score, evaluated once and cached across runs.

The cache key covers everything that could change the score: task and version, the eval split's
hash, the base model's weight hash, the evaluator and its configuration.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from autorl.engine.records_io import write_json
from autorl.paths import cache_dir


def baseline_key(
    *,
    task: str,
    task_version: str,
    eval_hash: str,
    model_hash: str,
    evaluator: str,
    evaluator_config: Mapping[str, Any],
) -> str:
    blob = json.dumps(
        {
            "task": task,
            "task_version": task_version,
            "eval": eval_hash,
            "model": model_hash,
            "evaluator": evaluator,
            "evaluator_config": dict(evaluator_config),
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def cached_baseline(key: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Return the cached result for ``key`` (with ``cached: True``) or compute and store it."""
    path = cache_dir("baselines") / f"{key}.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text())
            if isinstance(data, dict) and isinstance(data.get("score"), int | float):
                return {**data, "cached": True, "cache_key": key}
        except (OSError, json.JSONDecodeError):
            pass  # a corrupt cache entry is recomputed
    result = compute()
    write_json(path, {**result, "cache_key": key})
    return {**result, "cached": False, "cache_key": key}


def file_hash(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return "sha256:" + digest.hexdigest()
