"""The base model's score, evaluated once and cached across runs.

The cache key covers everything that could change the score: task and version, the eval split's
hash, the base model's weight hash, the evaluator and its configuration.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from autorl.digest import json_digest, short
from autorl.paths import cache_dir
from autorl_runner.records_io import write_json


def baseline_key(
    *,
    task: str,
    task_version: str,
    eval_hash: str,
    model_hash: str,
    evaluator: str,
    evaluator_config: Mapping[str, Any],
) -> str:
    payload = {
        "task": task,
        "task_version": task_version,
        "eval": eval_hash,
        "model": model_hash,
        "evaluator": evaluator,
        "evaluator_config": dict(evaluator_config),
    }
    return short(json_digest(payload), 64)


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
