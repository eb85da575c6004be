"""The results store: idempotent cells, one transaction per finished cell, interrupted cells."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_campaign.store import CampaignStore, open_store

from autorl.errors import AutorlError


def cell(cid: str, seed: int) -> dict:
    config = {"task": "gsm8k", "agent": "react", "model": "tiny", "seed": seed}
    return {
        "cell_id": cid,
        "position": seed,
        "replicate": 0,
        "axes": {"seed": seed},
        "config": config,
    }


def test_cells_are_added_once_and_keep_their_results(tmp_path: Path) -> None:
    store = CampaignStore(tmp_path)
    assert store.add_cells([cell("a", 0), cell("b", 1)]) == 2
    store.start("a", "a-1", tmp_path / "runs" / "a-1", worker="w1")
    store.finish(
        "a",
        status="completed",
        results={"baseline": 10.0, "best": 14.0, "improvement": 4.0, "unknown": 1},
        submissions=[{"submission_id": 1, "score": 14.0, "valid": 1, "elapsed_s": 30.0}],
    )
    assert store.add_cells([cell("a", 0), cell("b", 1), cell("c", 2)]) == 1  # only c is new
    rows = {r["cell_id"]: r for r in store.cells()}
    assert (rows["a"]["status"], rows["a"]["improvement"], rows["a"]["attempts"]) == (
        "completed",
        4.0,
        1,
    )
    assert rows["a"]["axes"] == {"seed": 0} and rows["a"]["config"]["agent"] == "react"
    assert store.counts() == {
        "pending": 2,
        "running": 0,
        "completed": 1,
        "failed": 0,
        "interrupted": 0,
        "infra_error": 0,
    }
    assert [s["score"] for s in store.submissions("a")] == [14.0]
    store.close()


def test_running_cells_of_a_dead_campaign_become_interrupted(tmp_path: Path) -> None:
    store = CampaignStore(tmp_path)
    store.add_cells([cell("a", 0)])
    store.start("a", "a-1", tmp_path / "a-1")
    store.close()  # the campaign process died here
    again = open_store(tmp_path, must_exist=True)
    assert again.mark_interrupted() == 1
    row = again.cell("a")
    assert row is not None and row["status"] == "interrupted" and "stopped" in row["error"]
    again.start("a", "a-2", tmp_path / "a-2")
    assert again.cell("a")["attempts"] == 2  # type: ignore[index]
    with pytest.raises(ValueError, match="unknown cell status"):
        again.finish("a", status="done")
    again.close()


def test_a_directory_that_is_not_a_campaign_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AutorlError, match="is not a campaign directory"):
        open_store(tmp_path, must_exist=True)


def test_a_read_only_store_is_read_without_writing(tmp_path: Path) -> None:
    store = CampaignStore(tmp_path)
    store.add_cells([cell("a", 0)])
    store.close()
    for path in tmp_path.iterdir():
        path.chmod(0o444)
    tmp_path.chmod(0o555)
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    try:
        reader = open_store(tmp_path, must_exist=True, read_only=True)
        assert [c["cell_id"] for c in reader.cells()] == ["a"]
        reader.close()
        assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before
    finally:
        tmp_path.chmod(0o755)


def test_a_job_run_again_gets_a_fresh_run_id(tmp_path: Path) -> None:
    """Ray re-runs a job whose worker died: the retry must not reuse the first try's directory."""
    from autorl_campaign.cellrun import CellJob, _fresh_run_id

    job = CellJob("a", "a-1", {}, str(tmp_path / "runs"), str(tmp_path / "logs"))
    (tmp_path / "logs").mkdir()
    assert _fresh_run_id(job, tmp_path / "logs") == "a-1"
    (tmp_path / "runs" / "a-1").mkdir(parents=True)
    assert _fresh_run_id(job, tmp_path / "logs") == "a-1.2"
    (tmp_path / "logs" / "a-1.2.log").write_text("")
    assert _fresh_run_id(job, tmp_path / "logs") == "a-1.3"
