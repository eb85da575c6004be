"""A campaign's page as data: its cells (status, numbers, each linked to its run) and the
compare table's groups with the cells behind every mean, read from its store opened read-only
(the campaign process alone writes it)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autorl.errors import AutorlError
from autorl_view.catalog import Catalog
from autorl_view.runpage import NO_VALUE, duration, plus_minus


def campaign_page(catalog: Catalog, campaign_dir: Path) -> dict[str, Any]:
    from autorl_campaign.analysis import compare_campaign, improvement_of, score_of
    from autorl_campaign.store import open_store

    store = open_store(campaign_dir, must_exist=True, read_only=True)
    try:
        meta = store.meta()
        cells = store.cells()
        counts = store.counts()
        try:
            comparison = compare_campaign(store)
            notes = list(comparison.notes)
        except (AutorlError, ValueError) as exc:
            comparison, notes = None, [f"no comparison: {exc}"]
    finally:
        store.close()
    rows = [_cell_row(catalog, c, score_of(c), improvement_of(c)) for c in cells]
    by_id = {r["cell_id"]: r for r in rows}
    groups = []
    if comparison is not None:
        table = comparison.tables.get("groups")
        records = table.to_dict("records") if table is not None else []
        for group, numbers in zip(comparison.groups, records, strict=False):
            groups.append(
                {
                    "label": comparison.short(group),
                    "n": numbers.get("n"),
                    "mean_score": _num(numbers.get("mean_score")),
                    "mean_improvement": _num(numbers.get("mean_improvement")),
                    "ci": _ci(numbers.get("improvement_low"), numbers.get("improvement_high")),
                    "cells": [by_id[c["cell_id"]] for c in group.cells if c["cell_id"] in by_id],
                }
            )
    return {
        "name": meta.get("name") or campaign_dir.name,
        "meta": meta,
        "counts": {k: v for k, v in counts.items() if v},
        "cells": rows,
        "groups": groups,
        "notes": notes,
        "running": any(r["status"] in ("queued", "running") for r in rows),
    }


def _cell_row(
    catalog: Catalog, cell: dict[str, Any], score: float | None, improvement: float | None
) -> dict[str, Any]:
    elapsed = ""
    if cell.get("status") == "running" and cell.get("started"):
        try:
            started = datetime.fromisoformat(str(cell["started"]).replace("Z", "+00:00"))
            if started.tzinfo is None:
                started = started.replace(tzinfo=UTC)
            elapsed = duration((datetime.now(UTC) - started).total_seconds())
        except ValueError:
            elapsed = ""
    axes = cell.get("axes") if isinstance(cell.get("axes"), dict) else {}
    return {
        "cell_id": str(cell.get("cell_id")),
        "axes": ", ".join(f"{k}={v}" for k, v in sorted(axes.items())),
        "status": str(cell.get("status") or ""),
        "elapsed": elapsed,
        "run": catalog.run_key(cell.get("run_dir")),
        "run_id": cell.get("run_id") or "",
        "score": plus_minus(score, cell.get("score_se")),
        "improvement": plus_minus(improvement, cell.get("improvement_se")),
        "end_reason": cell.get("end_reason") or cell.get("infra_cause") or "",
        "flagged": bool(cell.get("flagged")),
    }


def _num(value: Any) -> str:
    if not isinstance(value, int | float) or math.isnan(value):
        return NO_VALUE
    return f"{value:.2f}"


def _ci(low: Any, high: Any) -> str:
    if NO_VALUE in (_num(low), _num(high)):
        return ""
    return f"[{_num(low)}, {_num(high)}]"
