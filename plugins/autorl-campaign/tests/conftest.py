"""A small campaign store with fixed, hand-checkable numbers (written through CampaignStore).

Groups (every cell: model tiny, budget 300 s, agent_seconds 300):

    G1 react  · fake/a · gsm8k      baseline 40 (se 1)  best 44, 46, 48  -> improvement 4, 6, 8
    G2 react  · fake/b · gsm8k      baseline 40 (se 1)  best 41, 42, -   -> improvement 1, 2, 0
    G3 codex  · fake/a · gsm8k      baseline 40 (se 1)  best 43, 45      -> improvement 3, 5
    G4 react  · fake/a · humaneval  baselines 20, 22, 24 (no se)  best 30, 24, 30 -> 10, 2, 6

plus a failed cell (G1, seed 4) and a pending one (G2, seed 4). G3's seed-2 cell is not
comparable. Only G1's cells used a driver with metered tokens and cost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from autorl_campaign.store import CampaignStore

MODEL = "tiny"


def _cell(position: int, agent: str, driver: str, task: str, seed: int) -> dict[str, Any]:
    axes = {"agent": agent, "driver": driver, "task": task, "model": MODEL, "seed": seed}
    config = {**axes, "budget": {"wall_seconds": 300}}
    return {
        "cell_id": f"c{position:02d}",
        "position": position,
        "replicate": 0,
        "axes": axes,
        "config": config,
    }


def _sub(
    sid: int,
    elapsed: float,
    score: float | None,
    tokens: int | None = None,
    cost: float | None = None,
) -> dict[str, Any]:
    return {
        "submission_id": sid,
        "status": "scored" if score is not None else "failed",
        "valid": int(score is not None),
        "score": score,
        "score_se": 1.0 if score is not None else None,
        "elapsed_s": elapsed,
        "tokens_by_then": tokens,
        "cost_by_then": cost,
    }


G1 = ("react", "fake/a", "gsm8k")
G2 = ("react", "fake/b", "gsm8k")
G3 = ("codex", "fake/a", "gsm8k")
G4 = ("react", "fake/a", "humaneval")


def _row(
    position: int,
    group: tuple[str, str, str],
    seed: int,
    best: float | None,
    subs: list[dict[str, Any]],
    *,
    status: str = "completed",
    baseline: float = 40.0,
    base_se: float | None = 1.0,
    comparable: int = 1,
) -> tuple[dict[str, Any], str, float, float | None, float | None, int, Any, list]:
    """One :data:`CELLS` row; the defaults are what most cells share (baseline 40, se 1).

    The driver's spend is what the last submission had metered by then (None when unmetered).
    """
    last = subs[-1] if subs else {}
    metered = last.get("tokens_by_then") is not None
    spent = (last["tokens_by_then"], last["cost_by_then"]) if metered else None
    return (_cell(position, *group, seed), status, baseline, base_se, best, comparable, spent, subs)


# (cell, status, baseline, baseline_se, best, comparable, driver tokens/cost, submissions)
CELLS: list[tuple[dict[str, Any], str, float, float | None, float | None, int, Any, list]] = [
    # G1: best-so-far over time (grid 0, 50, ..., 300):
    #   seed 1: 0, 0, 2, 2, 4, 4, 4;  seed 2: 0, 6, 6, 6, 6, 6, 6;  seed 3: 0, 0, 0, 0, 0, 8, 8
    _row(1, G1, 1, 44.0, [_sub(1, 100, 42.0, 1000, 0.1), _sub(2, 200, 44.0, 2000, 0.2)]),
    _row(2, G1, 2, 46.0, [_sub(1, 50, 46.0, 500, 0.05), _sub(2, 300, None, 3000, 0.3)]),
    _row(3, G1, 3, 48.0, [_sub(1, 150, None, 1500, 0.15), _sub(2, 250, 48.0, 2500, 0.25)]),
    _row(4, G1, 4, None, [], status="failed"),
    _row(5, G2, 1, 41.0, [_sub(1, 100, 41.0)]),
    _row(6, G2, 2, 42.0, [_sub(1, 100, 42.0)]),
    _row(7, G2, 3, None, [_sub(1, 100, None)]),
    _row(8, G2, 4, None, [], status="pending"),
    _row(9, G3, 1, 43.0, [_sub(1, 100, 43.0)]),
    _row(10, G3, 2, 45.0, [_sub(1, 100, 45.0)], comparable=0),
    # G4: distinct baselines 20, 22, 24 (SD 2), no evaluator SE
    _row(11, G4, 1, 30.0, [_sub(1, 200, 30.0)], baseline=20.0, base_se=None),
    _row(12, G4, 2, 24.0, [_sub(1, 200, 24.0)], baseline=22.0, base_se=None),
    _row(13, G4, 3, 30.0, [_sub(1, 200, 30.0)], baseline=24.0, base_se=None),
]


def write_store(directory: Path, cells: list | None = None, name: str = "toy") -> Path:
    """A campaign directory whose store holds ``cells`` (default: :data:`CELLS`)."""
    rows = CELLS if cells is None else cells
    store = CampaignStore(directory)
    try:
        store.set_meta(name=name)
        store.add_cells([row[0] for row in rows])
        for cell, status, baseline, base_se, best, comparable, spent, subs in rows:
            if status == "pending":
                continue
            cid = cell["cell_id"]
            store.start(cid, f"run-{cid}", directory / "runs" / cid)
            results = {
                "baseline": baseline,
                "baseline_se": base_se,
                "best": best,
                "improvement": None if best is None else best - baseline,
                "agent_seconds": 300.0,
                "submissions": len(subs),
                "valid_submissions": sum(s["valid"] for s in subs),
                "driver_tokens": spent[0] if spent else None,
                "driver_cost_usd": spent[1] if spent else None,
                "comparable": comparable,
            }
            error = "the agent crashed" if status == "failed" else None
            store.finish(cid, status=status, results=results, submissions=subs, error=error)
    finally:
        store.close()
    return directory


@pytest.fixture
def campaign_dir(tmp_path: Path) -> Path:
    return write_store(tmp_path / "toy")


@pytest.fixture
def fixture_cells() -> list:
    """The rows of :data:`CELLS`, for tests that build a store from some of them."""
    return list(CELLS)


@pytest.fixture
def make_campaign(tmp_path: Path) -> Callable[..., Path]:
    return lambda cells, name="custom": write_store(tmp_path / name, cells, name)
