"""The results store: idempotent cells, one transaction per finished cell, interrupted cells."""

from __future__ import annotations

import json
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
        "queued": 0,
        "running": 0,
        "completed": 1,
        "failed": 0,
        "interrupted": 0,
        "infra_error": 0,
    }
    assert [s["score"] for s in store.submissions("a")] == [14.0]
    store.close()


def write_run(run_dir: Path, run_json: dict) -> Path:
    """The least of a run directory: its manifest and its run.json."""
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": run_dir.name, "config": {}}))
    (run_dir / "run.json").write_text(json.dumps(run_json))
    return run_dir


def test_queued_cells_have_no_start_and_count_as_running_only_once_started(
    tmp_path: Path,
) -> None:
    store = CampaignStore(tmp_path)
    store.add_cells([cell("a", 0), cell("b", 1)])
    store.queue("a", "a-1", tmp_path / "runs" / "a-1")
    store.queue("b", "b-1", tmp_path / "runs" / "b-1")
    assert [(c["status"], c["started"], c["attempts"]) for c in store.cells()] == [
        ("queued", None, 0),
        ("queued", None, 0),
    ]
    assert store.start("a", "a-1", tmp_path / "runs" / "a-1", "2026-01-01T00:00:00Z")
    assert not store.start("a", "a-1", tmp_path / "runs" / "a-1")  # once
    assert store.counts()["running"] == 1 and store.counts()["queued"] == 1
    assert store.unqueue() == 1  # the campaign stopped before b started
    assert store.cell("b")["status"] == "pending"  # type: ignore[index]
    with pytest.raises(ValueError, match="unknown cell status"):
        store.finish("a", status="done")
    store.close()


def test_a_stopped_campaign_s_cells_are_settled_from_what_their_runs_recorded(
    tmp_path: Path,
) -> None:
    """The store follows the runs: a run that recorded completed is completed (never run
    again), one whose harness died before recording its end is interrupted, a queued cell
    that never started is pending."""
    from autorl_campaign.runner import settle

    runs = tmp_path / "runs"
    store = CampaignStore(tmp_path)
    store.add_cells([cell("a", 0), cell("b", 1), cell("c", 2), cell("d", 3)])
    done = write_run(runs / "a-1", {"status": "completed", "end_reason": "agent_exit"})
    dead = write_run(runs / "b-1", {"status": "running", "pid": 999999999})
    for cid, run_dir in (("a", done), ("b", dead), ("c", runs / "c-1")):
        store.queue(cid, run_dir.name, run_dir)
        store.start(cid, run_dir.name, run_dir)
    store.queue("d", "d-1", runs / "d-1")
    store.close()  # the campaign process died here

    again = open_store(tmp_path, must_exist=True)
    assert settle(again, tmp_path / "logs") == {"completed": 1, "interrupted": 2}
    rows = {c["cell_id"]: c for c in again.cells()}
    assert rows["a"]["status"] == "completed" and rows["a"]["end_reason"] == "agent_exit"
    assert rows["b"]["status"] == "interrupted" and rows["b"]["attempts"] == 1
    assert rows["c"]["status"] == "interrupted" and "not found" in rows["c"]["error"]
    assert (rows["d"]["status"], rows["d"]["started"]) == ("pending", None)
    # a store that said failed for a run that completed (an older campaign) follows the run
    again.finish("a", status="failed", results={"run_dir": str(done)}, error="exit 1")
    assert settle(again, tmp_path / "logs") == {"completed": 1}
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
