"""A finished run's numbers for the store, read from the harness's records only.

The score columns follow the run's protocol (``autorl_records.scoring``): under ``sealed`` the
score is the test score of the one selected checkpoint and ``baseline`` is the baseline on test;
under ``reference`` (and for runs recorded before sealed scoring) the score is the best
submission and ``baseline`` the held-out baseline, as before. ``best`` stays the best dev score,
``dev_baseline`` the baseline the agent saw (the scaling curves climb on those). ``engine``
and ``precision`` say what graded the run (``autorl_records.engine_of``; null when the run
recorded none): ``autorl compare`` never ranks cells of different precisions together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autorl_records import (
    RunRecord,
    call_rows,
    comparable,
    engine_of,
    load_run,
    noise,
    posix_time,
    process_metrics,
    scoring,
)

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


def _calls(run_dir: Path) -> list[tuple[float, int, float]] | None:
    """(time, tokens, dollars) of each answered driver call, in log order (the record's
    call rows); None when the run had no driver."""
    rows = call_rows(run_dir)
    if rows is None:
        return None
    return [
        (when, row.tokens, row.cost_usd)
        for row in rows
        if row.answered and (when := row.when()) is not None
    ]


def _contributed(record: RunRecord) -> dict[str, Any]:
    """``flagged`` and ``best_route`` from the plugins' contributions to the run record (the
    analysis's), whichever reports the run rendered; empty without one."""
    columns: dict[str, Any] = {}
    for item in record.contributions.values():
        columns.update(item.summary)
    if "flagged" not in columns:
        return {}
    route = columns.get("best_route")
    return {
        "flagged": int(columns.get("flagged") is True),
        "best_route": route if isinstance(route, str) else None,
    }


def run_results(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The cell columns and the submission rows of one run directory; ``run_status``,
    ``run_ended`` and ``run_error`` (not columns) say how the run recorded its end."""
    record = load_run(run_dir)
    metrics = process_metrics(record)
    best = metrics["best_score"]
    run = record.run
    logged = _calls(run_dir)
    calls = logged or []
    scored = scoring(record, metrics)
    graded = engine_of(record)  # the engine and precision that graded the run
    results: dict[str, Any] = {
        **{k: scored[k] for k in SCORING_COLUMNS},
        "engine": graded.get("name") or graded.get("backend"),
        "precision": graded.get("precision"),
        "dev_baseline": metrics["baseline_score"],
        "best": best,
        "end_reason": run.end_reason if run is not None else None,
        "run_status": record.status,
        "run_ended": run.ended if run is not None and record.status != "running" else None,
        "run_error": run.error if run is not None else None,
        "agent_seconds": run.agent_seconds if run is not None else None,
        "submissions": len(record.submissions),
        "valid_submissions": sum(1 for s in record.submissions if s.valid),
        "driver_calls": len(calls) if logged is not None else None,
        "driver_tokens": sum(c[1] for c in calls) if calls else None,
        "driver_cost_usd": round(sum(c[2] for c in calls), 6) if calls else None,
        "comparable": int(comparable(record)),
        **_contributed(record),
    }
    results["best_se"] = noise(record, best).get("best_se")
    rows = []
    for s in record.submissions:
        when = posix_time(s.time)
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
