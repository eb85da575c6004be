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


# (cell, status, baseline, baseline_se, best, comparable, driver tokens/cost, submissions)
CELLS: list[tuple[dict[str, Any], str, float, float | None, float | None, int, Any, list]] = [
    # G1: best-so-far over time (grid 0, 50, ..., 300):
    #   seed 1: 0, 0, 2, 2, 4, 4, 4;  seed 2: 0, 6, 6, 6, 6, 6, 6;  seed 3: 0, 0, 0, 0, 0, 8, 8
    (
        _cell(1, "react", "fake/a", "gsm8k", 1),
        "completed",
        40.0,
        1.0,
        44.0,
        1,
        (2000, 0.2),
        [_sub(1, 100, 42.0, 1000, 0.1), _sub(2, 200, 44.0, 2000, 0.2)],
    ),
    (
        _cell(2, "react", "fake/a", "gsm8k", 2),
        "completed",
        40.0,
        1.0,
        46.0,
        1,
        (3000, 0.3),
        [_sub(1, 50, 46.0, 500, 0.05), _sub(2, 300, None, 3000, 0.3)],
    ),
    (
        _cell(3, "react", "fake/a", "gsm8k", 3),
        "completed",
        40.0,
        1.0,
        48.0,
        1,
        (2500, 0.25),
        [_sub(1, 150, None, 1500, 0.15), _sub(2, 250, 48.0, 2500, 0.25)],
    ),
    (_cell(4, "react", "fake/a", "gsm8k", 4), "failed", 40.0, 1.0, None, 1, None, []),
    # G2
    (
        _cell(5, "react", "fake/b", "gsm8k", 1),
        "completed",
        40.0,
        1.0,
        41.0,
        1,
        None,
        [_sub(1, 100, 41.0)],
    ),
    (
        _cell(6, "react", "fake/b", "gsm8k", 2),
        "completed",
        40.0,
        1.0,
        42.0,
        1,
        None,
        [_sub(1, 100, 42.0)],
    ),
    (
        _cell(7, "react", "fake/b", "gsm8k", 3),
        "completed",
        40.0,
        1.0,
        None,
        1,
        None,
        [_sub(1, 100, None)],
    ),
    (_cell(8, "react", "fake/b", "gsm8k", 4), "pending", 40.0, 1.0, None, 1, None, []),
    # G3
    (
        _cell(9, "codex", "fake/a", "gsm8k", 1),
        "completed",
        40.0,
        1.0,
        43.0,
        1,
        None,
        [_sub(1, 100, 43.0)],
    ),
    (
        _cell(10, "codex", "fake/a", "gsm8k", 2),
        "completed",
        40.0,
        1.0,
        45.0,
        0,
        None,
        [_sub(1, 100, 45.0)],
    ),
    # G4: distinct baselines 20, 22, 24 (SD 2), no evaluator SE
    (
        _cell(11, "react", "fake/a", "humaneval", 1),
        "completed",
        20.0,
        None,
        30.0,
        1,
        None,
        [_sub(1, 200, 30.0)],
    ),
    (
        _cell(12, "react", "fake/a", "humaneval", 2),
        "completed",
        22.0,
        None,
        24.0,
        1,
        None,
        [_sub(1, 200, 24.0)],
    ),
    (
        _cell(13, "react", "fake/a", "humaneval", 3),
        "completed",
        24.0,
        None,
        30.0,
        1,
        None,
        [_sub(1, 200, 30.0)],
    ),
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
