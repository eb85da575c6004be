"""load_run on a submissions log written by the real grading service over real HTTP."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
from autorl_records import load_run, process_metrics, summary
from autorl_testing.checkpoints import write_checkpoint
from autorl_testing.grading import LiveGrader as Grader


def submit(grader: Grader, path: str, wait: bool) -> dict:
    r = httpx.post(
        f"{grader.url}/submit", json={"model_path": path, "wait": wait}, headers=grader.auth
    )
    assert r.status_code in (200, 202), r.text
    return r.json()


def test_records_fold_a_real_grading_log(grader: Grader, tmp_path: Path) -> None:
    out = grader.workspace / "output"
    write_checkpoint(out / "v1", seed=1)
    shutil.copytree(out / "v1", out / "v1-again")
    bad = write_checkpoint(out / "bad", seed=2)
    (bad / "config.json").unlink()
    write_checkpoint(out / "v2", seed=3)

    grader.release.clear()  # v1 is still being evaluated when its duplicate arrives
    submit(grader, "output/v1", wait=False)
    assert submit(grader, "output/v1-again", wait=True)["status"] == "duplicate"  # final at intake
    grader.release.set()
    assert submit(grader, "output/bad", wait=True)["status"] == "failed"
    assert submit(grader, "output/v2", wait=True)["status"] == "scored"
    assert grader.service.drain(timeout=30)

    # the grader's root is tmp_path: complete it into a run directory like the engine does
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "run_id": "live",
                "config": {"task": "t"},
                "hashes": {"base_model": "x"},
                "sandbox": {"name": "isolated", "isolated": True},
            }
        )
    )
    (tmp_path / "baseline.json").write_text(json.dumps({"score": 10.0, "n": 1}))
    record = load_run(tmp_path)
    assert record.problems == (
        "run.json missing: the run is still in progress, or the harness was killed",
    )
    subs = {s.submission_id: s for s in record.submissions}
    assert [subs[i].status for i in (1, 2, 3, 4)] == ["scored", "duplicate", "failed", "scored"]
    assert subs[1].score == 21.0 and subs[1].statuses[0] == "received"
    assert subs[1].elapsed_s is not None and subs[1].updated_elapsed_s >= subs[1].elapsed_s
    assert subs[1].weight_hash.startswith("sha256:")
    assert (subs[2].duplicate_of, subs[2].score, subs[2].valid) == (1, 21.0, True)
    assert "config.json" in (subs[3].reason or "")
    m = process_metrics(record)
    assert m["valid_submission_rate"] == 0.75
    assert (m["best_score"], m["improvement"], m["best_submission_id"]) == (24.0, 14.0, 4)
    assert m["monotonic_ratio"] == 1.0
    assert summary(record)["submissions"][2]["reason"] == subs[3].reason
