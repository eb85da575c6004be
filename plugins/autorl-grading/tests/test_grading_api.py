"""The grading API over real HTTP: auth, path confinement, intake, dedup, deadline, quota."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest
from autorl_testing.checkpoints import write_checkpoint
from autorl_testing.grading import LiveGrader as Grader


def test_health_is_open_and_everything_else_needs_the_token(grader: Grader) -> None:
    assert httpx.get(f"{grader.url}/health").json() == {"status": "ok"}
    for method, path in [("GET", "/budget"), ("GET", "/submissions"), ("POST", "/submit")]:
        missing = httpx.request(method, grader.url + path, json={"model_path": "output/v1"})
        wrong = httpx.request(
            method,
            grader.url + path,
            json={"model_path": "output/v1"},
            headers={"Authorization": "Bearer nope"},
        )
        assert missing.status_code == 401, path
        assert wrong.status_code == 401, path
    assert grader.log() == []


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink", "output_root"])
def test_paths_outside_output_are_refused_and_nothing_is_evaluated(
    grader: Grader, tmp_path: Path, kind: str
) -> None:
    outside = write_checkpoint(tmp_path / "elsewhere")
    write_checkpoint(grader.workspace / "code" / "ckpt")
    if kind == "dotdot":
        path = "output/../code/ckpt"
    elif kind == "absolute":
        path = str(outside)
    elif kind == "symlink":
        os.symlink(outside, grader.workspace / "output" / "escape")
        path = "output/escape"
    else:
        path = "output"
    r = httpx.post(f"{grader.url}/submit", json={"model_path": path}, headers=grader.auth)
    assert r.status_code == 400, r.text
    assert "output" in r.json()["detail"]
    assert grader.evaluated == []
    assert grader.log() == []


def test_a_symlinked_file_escaping_the_workspace_fails_the_submission(
    grader: Grader, tmp_path: Path
) -> None:
    outside = write_checkpoint(tmp_path / "elsewhere")
    ckpt = grader.workspace / "output" / "v1"
    ckpt.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        os.symlink(outside / name, ckpt / name)
    r = httpx.post(
        f"{grader.url}/submit", json={"model_path": "output/v1", "wait": True}, headers=grader.auth
    )
    assert r.json()["status"] == "failed"
    assert "outside the workspace" in r.json()["reason"]
    assert grader.evaluated == []


def test_malformed_checkpoint_is_a_failed_submission_and_the_run_goes_on(grader: Grader) -> None:
    bad = write_checkpoint(grader.workspace / "output" / "bad")
    data = (bad / "model.safetensors").read_bytes()
    (bad / "model.safetensors").write_bytes(data[: len(data) - 10])
    r = httpx.post(
        f"{grader.url}/submit", json={"model_path": "output/bad", "wait": True}, headers=grader.auth
    )
    assert r.status_code == 200
    assert r.json()["status"] == "failed"
    assert "truncated" in r.json()["reason"]
    nocfg = write_checkpoint(grader.workspace / "output" / "nocfg", seed=1)
    (nocfg / "config.json").unlink()
    r = httpx.post(
        f"{grader.url}/submit",
        json={"model_path": "output/nocfg", "wait": True},
        headers=grader.auth,
    )
    assert "config.json missing" in r.json()["reason"]
    write_checkpoint(grader.workspace / "output" / "good", seed=2)
    r = httpx.post(
        f"{grader.url}/submit",
        json={"model_path": "output/good", "wait": True},
        headers=grader.auth,
    )
    assert r.json()["status"] == "scored"
    assert r.json()["score"] == 23.0
    statuses = [(e["submission_id"], e["status"]) for e in grader.log()]
    assert (1, "failed") in statuses and (2, "failed") in statuses and (3, "scored") in statuses
    failed = [e for e in grader.log() if e["status"] == "failed"]
    assert all(e["reason"] for e in failed)


def test_identical_weights_are_evaluated_once(grader: Grader) -> None:
    write_checkpoint(grader.workspace / "output" / "v1", seed=5)
    write_checkpoint(grader.workspace / "output" / "v2", seed=5)
    first = httpx.post(
        f"{grader.url}/submit", json={"model_path": "output/v1", "wait": True}, headers=grader.auth
    ).json()
    second = httpx.post(
        f"{grader.url}/submit", json={"model_path": "output/v2", "wait": True}, headers=grader.auth
    ).json()
    assert first["status"] == "scored"
    assert second["status"] == "duplicate"
    assert second["duplicate_of"] == 1
    assert second["score"] == first["score"]
    assert len(grader.evaluated) == 1
    budget = httpx.get(f"{grader.url}/budget", headers=grader.auth).json()
    assert budget["submissions_used"] == 1


def test_log_entry_is_on_disk_before_the_answer_and_queue_reports_status(grader: Grader) -> None:
    grader.release.clear()  # hold the evaluation so the status is observable
    write_checkpoint(grader.workspace / "output" / "v1", seed=7)
    r = httpx.post(f"{grader.url}/submit", json={"model_path": "output/v1"}, headers=grader.auth)
    assert r.status_code == 202
    assert r.json()["status"] in {"received", "queued", "evaluating"}  # intake runs off-thread
    assert grader.log()[0]["status"] == "received"
    sid = r.json()["submission_id"]
    deadline = time.monotonic() + 10
    while grader.service.get(sid)["status"] == "received" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [e["status"] for e in grader.log()][:2] == ["received", "queued"]
    listed = httpx.get(f"{grader.url}/submissions", headers=grader.auth).json()["submissions"]
    assert [s["submission_id"] for s in listed] == [sid]
    grader.release.set()
    assert grader.service.drain(10)
    done = httpx.get(f"{grader.url}/submissions/{sid}", headers=grader.auth).json()
    assert done["status"] == "scored"
    assert httpx.get(f"{grader.url}/submissions/99", headers=grader.auth).status_code == 404


def test_submission_after_the_deadline_is_refused(tmp_path: Path) -> None:
    g = Grader(tmp_path, wall_seconds=0.2)
    try:
        write_checkpoint(g.workspace / "output" / "v1")
        time.sleep(0.3)
        r = httpx.post(f"{g.url}/submit", json={"model_path": "output/v1"}, headers=g.auth)
        assert r.status_code == 409
        assert "deadline" in r.json()["detail"]
        assert g.evaluated == [] and g.log() == []
    finally:
        g.close()


def test_quota_is_enforced(tmp_path: Path) -> None:
    g = Grader(tmp_path, max_submissions=1)
    try:
        write_checkpoint(g.workspace / "output" / "v1", seed=1)
        write_checkpoint(g.workspace / "output" / "v2", seed=2)
        ok = httpx.post(f"{g.url}/submit", json={"model_path": "output/v1"}, headers=g.auth)
        assert ok.status_code in (200, 202)
        r = httpx.post(f"{g.url}/submit", json={"model_path": "output/v2"}, headers=g.auth)
        assert r.status_code == 409 and "quota" in r.json()["detail"]
    finally:
        g.close()


def test_no_endpoint_sets_the_baseline_or_writes_scores(grader: Grader) -> None:
    schema = httpx.get(f"{grader.url}/openapi.json").json()
    writes = {
        (path, method)
        for path, item in schema["paths"].items()
        for method in item
        if method in {"post", "put", "patch", "delete"}
    }
    assert writes == {("/submit", "post"), ("/final", "post")}  # /final names, never scores
    for path in ("/set_baseline", "/baseline", "/score"):
        r = httpx.post(grader.url + path, json={"score": 100}, headers=grader.auth)
        assert r.status_code in (404, 405)


def test_budget_shows_gpu_hours_and_excluded_evaluation_time(grader: Grader) -> None:
    """What the agent reads at /budget: its GPU-hours (the engine's meter) and the time given
    back when evaluation is not charged, with the deadline moved back by it."""
    from autorl_runner.gpus import GpuMeter
    from autorl_testing.gpus import FakeProbe

    meter = GpuMeter(FakeProbe("0=100"), [0], limit_hours=2.0)
    meter.sample(1800)
    grader.clock.meters["gpu"] = meter.snapshot
    before = httpx.get(f"{grader.url}/budget", headers=grader.auth).json()
    grader.clock.credit(30.0)
    after = httpx.get(f"{grader.url}/budget", headers=grader.auth).json()
    assert after["gpu_hours"] == 0.5 and after["max_gpu_hours"] == 2.0
    assert after["gpu_hours_remaining"] == 1.5 and after["gpus"] == [0]
    assert after["evaluation_seconds_excluded"] == 30.0
    assert after["remaining_s"] > before["remaining_s"] + 25


def test_resubmitting_the_same_weights_buys_no_time_when_evaluation_is_excluded(
    tmp_path: Path,
) -> None:
    """Attack on ``evaluation_time = "excluded"``: an agent resubmits the weights it already
    had graded, hoping each evaluation pushes its deadline back. Only the one real evaluation
    gives time back; the duplicates are never evaluated and give nothing."""
    g = Grader(tmp_path, wall_seconds=600, max_submissions=6, eval_seconds=0.5,
               exclude_evaluation_time=True)  # fmt: skip
    try:
        for name in ("v1", "v2", "v3", "v4"):
            write_checkpoint(g.workspace / "output" / name, seed=11)
        statuses = [
            httpx.post(
                f"{g.url}/submit", json={"model_path": f"output/{n}", "wait": True},
                headers=g.auth, timeout=30,
            ).json()["status"]
            for n in ("v1", "v2", "v3", "v4")
        ]  # fmt: skip
        assert statuses == ["scored", "duplicate", "duplicate", "duplicate"]
        budget = httpx.get(f"{g.url}/budget", headers=g.auth).json()
        assert 0.5 <= budget["evaluation_seconds_excluded"] < 1.5
        assert budget["remaining_s"] < 600 + 1.5
    finally:
        g.close()
