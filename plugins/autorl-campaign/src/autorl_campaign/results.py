"""A finished run's numbers for the store, read from the harness's records only.

The score columns follow the run's protocol (``autorl_records.scoring``): under ``sealed`` the
score is the test score of the one selected checkpoint and ``baseline`` is the baseline on test;
under ``reference`` (and for runs recorded before sealed scoring) the score is the best
submission and ``baseline`` the held-out baseline, as before. ``best`` stays the best dev score,
``dev_baseline`` the baseline the agent saw (the scaling curves climb on those).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from autorl_records import comparable, load_run, noise, process_metrics, scoring

CALL_LOG = "driver_calls.jsonl"
SCORING_COLUMNS = (
    "protocol",
    "score",
    "score_se",
    "baseline",
    "baseline_se",
    "improvement",
    "improvement_se",
    "selected_submission",
    "selection_rule",
    "selection_gap",
    "selection_gap_se",
    "oracle_gap",
    "test_n",
    "dev_n",
    "infra_cause",
)


def _when(ts: Any) -> float | None:
    if not isinstance(ts, str):
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _calls(run_dir: Path) -> list[tuple[float, int, float]]:
    """(time, tokens, dollars) of each answered driver call, in log order."""
    path = run_dir / CALL_LOG
    if not path.is_file():
        return []
    calls = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict) or "error" in record:
            continue
        usage = record.get("usage") or {}
        when = _when(record.get("ts"))
        if when is None:
            continue
        tokens = int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)
        calls.append((when, tokens, float(record.get("cost_usd") or 0.0)))
    return calls


def _analysis(run_dir: Path) -> dict[str, Any]:
    """``flagged`` and ``best_route`` from the run's post-hoc analysis (``report/summary.json``,
    written by the harness's reports after the agent ended); empty without one."""
    try:
        summary = json.loads((run_dir / "report" / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(summary, dict) or "flagged" not in summary:
        return {}
    route = summary.get("best_route")
    return {
        "flagged": int(summary.get("flagged") is True),
        "best_route": route if isinstance(route, str) else None,
    }


def run_results(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The cell columns and the submission rows of one run directory."""
    record = load_run(run_dir)
    metrics = process_metrics(record)
    best = metrics["best_score"]
    run = record.run
    calls = _calls(run_dir)
    scored = scoring(record, metrics)
    results: dict[str, Any] = {
        **{k: scored[k] for k in SCORING_COLUMNS},
        "dev_baseline": metrics["baseline_score"],
        "best": best,
        "end_reason": run.end_reason if run is not None else None,
        "agent_seconds": run.agent_seconds if run is not None else None,
        "submissions": len(record.submissions),
        "valid_submissions": sum(1 for s in record.submissions if s.valid),
        "driver_calls": len(calls) if (run_dir / CALL_LOG).is_file() else None,
        "driver_tokens": sum(c[1] for c in calls) if calls else None,
        "driver_cost_usd": round(sum(c[2] for c in calls), 6) if calls else None,
        "comparable": int(comparable(record)),
        **_analysis(run_dir),
    }
    results["best_se"] = noise(record, best).get("best_se")
    rows = []
    for s in record.submissions:
        when = _when(s.time)
        spent = [c for c in calls if when is not None and c[0] <= when]
        score_se = s.metrics.get("score_se") if isinstance(s.metrics, dict) else None
        rows.append(
            {
                "submission_id": s.submission_id,
                "status": s.status,
                "valid": int(bool(s.valid)),
                "score": s.score,
                "score_se": score_se if isinstance(score_se, int | float) else None,
                "elapsed_s": s.elapsed_s,
                "tokens_by_then": sum(c[1] for c in spent) if calls else None,
                "cost_by_then": round(sum(c[2] for c in spent), 6) if calls else None,
            }
        )
    return results, rows
