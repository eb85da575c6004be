"""What of an autorl run becomes an MLflow param, metric or tag (pure functions, no MLflow).

Kept apart from the MLflow calls so the naming is one readable table and testable on its own.
Everything comes from the harness's records (the run config, ``summary.json``, the submissions
log), never from the agent's workspace.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from autorl_records import posix_time

MAX_PARAM_CHARS = 6000  # MLflow's limit on a param value
MAX_TAG_CHARS = 5000
SKIPPED_CONFIG_KEYS = frozenset({"run_id", "runs_dir"})  # tags / machine-local paths, not settings
SECRET_KEY = re.compile(
    r"(^|[._-])(api[_-]?key|key|token|secret|password|passwd|credentials?|auth(orization)?)$",
    re.IGNORECASE,
)
UNSAFE_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. /]")  # what MLflow accepts in a key

SUMMARY_PARAMS = ("task_version", "split", "metric", "protocol", "selection_rule")
SUMMARY_METRICS = (
    "baseline_score",
    "baseline_se",
    "baseline_n",
    "best_score",
    "best_se",
    "score",  # the run's score: sealed test score of the selected checkpoint, or the best
    "score_se",
    "baseline",  # the baseline on the score's split
    "test_baseline_se",
    "improvement",
    "improvement_se",
    "dev_best",
    "selection_gap",
    "selection_gap_se",
    "oracle_gap",
    "test_n",
    "dev_n",
    "agent_seconds",
    "budget_seconds",
)
DRIVER_METRICS = {  # summary["driver_calls"] field -> metric
    "calls": "driver/calls",
    "errors": "driver/errors",
    "refused": "driver/refused",
    "retries": "driver/retries",
    "input_tokens": "driver/input_tokens",
    "output_tokens": "driver/output_tokens",
    "total_tokens": "driver/tokens",
    "cost_usd": "driver/cost_usd",
}
BASELINE_METRICS = ("baseline_score", "baseline_se", "baseline_n")
SUBMISSION_SCORE = "submission/score"
SUBMISSION_SE = "submission/score_se"
SUBMISSION_ELAPSED = "submission/elapsed_s"
VALID_STATUSES = frozenset({"scored", "duplicate"})


def safe_key(key: str) -> str:
    return UNSAFE_KEY_CHARS.sub("_", key)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def config_params(config: Mapping[str, Any]) -> dict[str, str]:
    """The run config flattened to dotted keys (``budget.wall_seconds``, ``task_options.x``).

    Values are text as MLflow stores them: strings as they are, everything else as JSON (so
    ``null``, ``true`` and ``[1, 2]`` read back unambiguously). Empty tables are left out; a key
    that names a secret is masked, in case an option ever carries one.
    """
    params: dict[str, str] = {}
    for key, value in _flatten(config, ""):
        if key.split(".")[0] in SKIPPED_CONFIG_KEYS:
            continue
        text = "***" if SECRET_KEY.search(key) else _text(value)
        params[safe_key(key)] = text[:MAX_PARAM_CHARS]
    return params


def _flatten(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _flatten(item, f"{prefix}.{key}" if prefix else str(key))
    elif prefix:
        yield prefix, value


def summary_params(summary: Mapping[str, Any]) -> dict[str, str]:
    """What the summary adds to the config: the task's version, its split and metric name."""
    return {key: _text(summary[key]) for key in SUMMARY_PARAMS if summary.get(key) is not None}


def number(value: Any) -> float | None:
    """A finite float, or None (MLflow metrics are numbers; bools and text are not metrics)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def summary_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """Run-level numbers: scores and their standard errors, process metrics, driver spend."""
    metrics = {key: summary.get(key) for key in SUMMARY_METRICS}
    for key, value in (summary.get("process_metrics") or {}).items():
        metrics[f"process/{key}"] = value
    driver = summary.get("driver_calls") or {}
    for key, name in DRIVER_METRICS.items():
        metrics[name] = driver.get(key)
    numbers = {safe_key(key): number(value) for key, value in metrics.items()}
    return {key: value for key, value in numbers.items() if value is not None}


def baseline_metrics(baseline: Mapping[str, Any]) -> dict[str, float]:
    """``baseline.json`` (score, n, the evaluator's metrics) under the summary's names."""
    evaluator = baseline.get("metrics") or {}
    metrics = {
        "baseline_score": number(baseline.get("score")),
        "baseline_se": number(evaluator.get("score_se")) if isinstance(evaluator, dict) else None,
        "baseline_n": number(baseline.get("n")),
    }
    return {k: v for k, v in metrics.items() if v is not None}


def submission_metrics(
    score: Any, elapsed_s: Any, evaluator_metrics: Mapping[str, Any]
) -> dict[str, float]:
    """One valid submission's numbers, logged at ``step`` = its id.

    ``elapsed_s`` is when the agent submitted it (its decision time, as in the report);
    the evaluator's numeric metrics come along under ``submission/eval/``.
    """
    metrics = {
        SUBMISSION_SCORE: number(score),
        SUBMISSION_ELAPSED: number(elapsed_s),
        SUBMISSION_SE: number(evaluator_metrics.get("score_se")),
    }
    for key, value in evaluator_metrics.items():
        if key != "score_se":
            metrics[safe_key(f"submission/eval/{key}")] = number(value)
    return {k: v for k, v in metrics.items() if v is not None}


def run_tags(
    run_id: str,
    run_dir: str,
    summary: Mapping[str, Any],
    campaign_id: str | None,
    campaign_cell: str | None = None,
) -> dict[str, str]:
    """Tags for searching and grouping (``tags.`autorl.comparable` = 'true'``)."""
    versions = summary.get("versions") or {}
    tags: dict[str, Any] = {
        "autorl.run_id": run_id,
        "autorl.run_dir": run_dir,
        "autorl.status": summary.get("status"),
        "autorl.end_reason": summary.get("end_reason"),
        "autorl.comparable": summary.get("comparable"),
        "autorl.version": versions.get("autorl"),
        "autorl.campaign_id": campaign_id,
        "autorl.campaign_cell": campaign_cell,
        "autorl.error": summary.get("error"),
    }
    for name, value in (summary.get("hashes") or {}).items():
        tags[f"autorl.hash.{name}"] = value
    return {
        safe_key(k): _text(v)[:MAX_TAG_CHARS] for k, v in tags.items() if v is not None and v != ""
    }


def campaign_of(*sources: Mapping[str, Any]) -> str | None:
    """A campaign id carried by the run config or summary, if a campaign put one there."""
    for source in sources:
        value = source.get("campaign_id")
        if isinstance(value, str | int) and str(value).strip():
            return str(value).strip()
    return None


def millis(timestamp: Any) -> int | None:
    """autorl's ISO times (``2026-11-25T12:01:08.954Z``) as MLflow's epoch milliseconds."""
    seconds = posix_time(timestamp)
    return None if seconds is None else int(seconds * 1000)


def mlflow_status(summary: Mapping[str, Any]) -> str:
    """autorl's run status as MLflow's terminal run status."""
    status = summary.get("status")
    if status == "completed":
        return "FINISHED"
    return "KILLED" if status == "interrupted" else "FAILED"
