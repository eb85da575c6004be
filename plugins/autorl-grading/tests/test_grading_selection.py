"""Selection (docs/scoring.md): the agent's declared final checkpoint, else the best dev score
(ties: the later), else none; ``POST /final`` and its refusals over real HTTP; the graded
directories of the candidates kept for the sealed evaluation and released after it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from autorl_runner.budget import BudgetClock
from autorl_runner.records_io import SubmissionLog, read_submission_log
from autorl_testing.checkpoints import write_checkpoint

from autorl.types import CheckpointInfo

TOKEN = "selection-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Live:
    """The real service and app; submission N scores ``scores[N]`` (dev)."""

    def __init__(self, root: Path, scores: dict[int, float], **settings: object) -> None:
        from autorl_grading.app import create_app
        from autorl_grading.server import GradingServer
        from autorl_grading.service import GradingService

        self.root = root
        self.workspace = root / "workspace"
        (self.workspace / "output").mkdir(parents=True)
        (self.workspace / "code").mkdir()
        self.scores = scores
        self.clock = BudgetClock(600)
        self.clock.start()
        self.service = GradingService(
            workspace=self.workspace,
            storage=root / "submissions",
            log=SubmissionLog(root / "submissions.jsonl"),
            clock=self.clock,
            max_submissions=8,
            baseline_score=10.0,
            base_weight_hash="sha256:base",
            evaluate=self._evaluate,
            **settings,  # type: ignore[arg-type]
        )
        self.server = GradingServer(create_app(self.service, TOKEN)).start()
        self.url = self.server.url

    def _evaluate(self, sid: int, ckpt: Path, info: CheckpointInfo) -> tuple[float, dict]:
        return self.scores[sid], {"n": 10}

    def submit(self, name: str, seed: int, **body: object) -> httpx.Response:
        write_checkpoint(self.workspace / "output" / name, seed=seed)
        return httpx.post(
            f"{self.url}/submit",
            json={"model_path": f"output/{name}", "wait": True, **body},
            headers=AUTH,
        )

    def final(self, body: object) -> httpx.Response:
        return httpx.post(f"{self.url}/final", json=body, headers=AUTH)

    def graded(self, sid: int) -> Path:
        return self.root / "submissions" / str(sid) / "checkpoint"

    def close(self) -> None:
        self.server.stop()
        self.service.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    g = Live(tmp_path, {1: 30.0, 2: 50.0, 3: 40.0})
    yield g
    g.close()


def test_without_a_declaration_the_best_dev_score_is_selected_and_only_it_is_kept(
    live: Live,
) -> None:
    for n in (1, 2, 3):
        assert live.submit(f"v{n}", seed=n).json()["status"] == "scored"
    selection = live.service.selection()
    assert (selection["submission_id"], selection["rule"]) == (2, "best_dev")
    assert selection["dev_score"] == 50.0 and selection["best_dev"] == 50.0
    assert selection["graded_dir"] == live.graded(2) and live.graded(2).is_dir()
    assert not live.graded(1).exists() and not live.graded(3).exists()
    live.service.release()
    assert not live.graded(2).exists()


def test_an_answer_comes_after_the_clean_up_of_what_it_scored(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``wait`` answers once the evaluation's clean-up is done: a slow prune (a busy disk) must
    not leave a superseded graded directory behind the answer (CI's one failure, 44c63ac)."""
    import time

    after = live.service._after_evaluation

    def slow(sub: object, graded: Path) -> None:
        time.sleep(0.5)
        after(sub, graded)  # type: ignore[arg-type]

    monkeypatch.setattr(live.service, "_after_evaluation", slow)
    for n in (1, 2):
        assert live.submit(f"v{n}", seed=n).json()["status"] == "scored"
        assert not live.graded(1).exists() if n == 2 else live.graded(1).is_dir()


def test_a_fault_outside_the_evaluator_fails_that_submission_only(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    observe = live.service._observe

    def broken(graded: Path) -> dict:
        monkeypatch.setattr(live.service, "_observe", observe)  # only the first one
        raise RuntimeError("disk gone")

    monkeypatch.setattr(live.service, "_observe", broken)
    first = live.submit("v1", seed=1).json()
    assert first["status"] == "failed" and "disk gone" not in first["reason"]
    assert live.submit("v2", seed=2).json()["status"] == "scored"
    assert not live.graded(1).exists()


def test_a_tie_on_dev_selects_the_later(tmp_path: Path) -> None:
    g = Live(tmp_path, {1: 50.0, 2: 50.0, 3: 20.0})
    try:
        for n in (1, 2, 3):
            g.submit(f"v{n}", seed=n)
        assert g.service.selection()["submission_id"] == 2
        assert not g.graded(1).exists()  # the earlier of the tie is no candidate
    finally:
        g.close()


def test_declared_on_submit_wins_over_a_better_dev_score(live: Live) -> None:
    r = live.submit("v1", seed=1, final=True)
    assert r.json()["final"] is True
    live.submit("v2", seed=2)
    selection = live.service.selection()
    assert (selection["submission_id"], selection["rule"]) == (1, "declared")
    # both candidates are kept until the sealed evaluation: the declared one and the best dev
    assert live.graded(1).is_dir() and live.graded(2).is_dir()
    budget = httpx.get(f"{live.url}/budget", headers=AUTH).json()
    listed = httpx.get(f"{live.url}/submissions", headers=AUTH).json()
    assert budget["final"] == 1 and listed["final"] == 1
    assert [s["final"] for s in listed["submissions"]] == [True, False]


def test_post_final_declares_an_earlier_one_and_the_last_declaration_counts(live: Live) -> None:
    for n in (1, 2, 3):
        live.submit(f"v{n}", seed=n)
    assert live.final({"submission_id": 3}).status_code == 200
    r = live.final({"submission_id": 1})
    assert r.status_code == 200 and r.json()["submission_id"] == 1 and r.json()["final"]
    assert live.service.selection()["submission_id"] == 1
    # kept: the declared one (taken in again from output/v1: its copy went after its dev
    # evaluation) and the best dev; the one declared before is gone
    assert live.graded(1).is_dir() and live.graded(2).is_dir() and not live.graded(3).exists()
    # the declarations, fsynced beside the submissions log (whose schema they leave alone)
    declared = (live.root / "final.jsonl").read_text().splitlines()
    assert [json.loads(line)["submission_id"] for line in declared] == [3, 1]


def test_declaring_a_let_go_submission_whose_weights_changed_is_refused(live: Live) -> None:
    live.submit("v1", seed=1)
    live.submit("v2", seed=2)
    assert not live.graded(1).exists()  # no candidate: its copy went after its evaluation
    write_checkpoint(live.workspace / "output" / "v1", seed=7)  # overwritten since
    r = live.final({"submission_id": 1})
    assert r.status_code == 409 and "no longer at output/v1" in r.json()["detail"]
    assert live.service.final is None and not live.graded(1).exists()


def test_post_final_refusals_are_clear(live: Live) -> None:
    live.submit("v1", seed=1)
    bad = write_checkpoint(live.workspace / "output" / "bad", seed=9)
    data = (bad / "model.safetensors").read_bytes()
    (bad / "model.safetensors").write_bytes(data[:-10])
    r = httpx.post(
        f"{live.url}/submit", json={"model_path": "output/bad", "wait": True}, headers=AUTH
    )
    assert r.json()["status"] == "failed"
    missing = live.final({"submission_id": 7})
    assert missing.status_code == 404 and "no submission 7" in missing.json()["detail"]
    failed = live.final({"submission_id": 2})
    assert failed.status_code == 409 and "failed" in failed.json()["detail"]
    zero = live.final({"submission_id": 0})
    assert zero.status_code == 400 and "1 or more" in zero.json()["detail"]
    assert live.final({"submission_id": "one"}).status_code == 422
    assert live.final({}).status_code == 422
    assert httpx.post(f"{live.url}/final", json={"submission_id": 1}).status_code == 401
    assert live.service.final is None
    live.service.close_intake("deadline after 600 s")
    late = live.final({"submission_id": 1})
    assert late.status_code == 409 and "stopped" in late.json()["detail"]


def test_a_declared_submission_that_fails_falls_back_to_the_best_dev(live: Live) -> None:
    live.submit("v1", seed=1)
    bad = write_checkpoint(live.workspace / "output" / "bad", seed=9)
    (bad / "config.json").unlink()
    r = httpx.post(
        f"{live.url}/submit",
        json={"model_path": "output/bad", "wait": True, "final": True},
        headers=AUTH,
    )
    assert r.json()["status"] == "failed"
    selection = live.service.selection()
    assert (selection["submission_id"], selection["rule"], selection["declared"]) == (
        1,
        "best_dev",
        2,
    )


def test_a_declared_duplicate_stands_for_its_original(live: Live) -> None:
    live.submit("v1", seed=1)
    live.submit("v2", seed=2)
    dup = live.submit("again", seed=1, final=True).json()
    assert dup["status"] == "duplicate" and dup["duplicate_of"] == 1
    selection = live.service.selection()
    assert (selection["submission_id"], selection["rule"]) == (1, "declared")
    # the duplicate's copy (same weights) stands in for the original's, let go after its dev
    # evaluation since 2 was better
    assert selection["graded_dir"] == live.graded(3) and live.graded(3).is_dir()


def test_nothing_scored_selects_none(live: Live) -> None:
    selection = live.service.selection()
    assert (selection["submission_id"], selection["rule"]) == (None, "none")


def test_a_declared_copy_of_the_base_counts_as_scored(tmp_path: Path) -> None:
    from autorl_grading.checkpoints import hash_weights

    base = write_checkpoint(tmp_path / "base", seed=5)
    g = Live(tmp_path / "run", {1: 90.0})
    g.service.base_weight_hash = hash_weights(base)
    try:
        g.submit("v1", seed=1)
        copy = g.submit("copy", seed=5, final=True).json()
        assert copy["copy_of_base"] and copy["status"] == "scored"
        selection = g.service.selection()
        assert (selection["submission_id"], selection["rule"]) == (2, "declared")
        assert selection["copy_of_base"] is True and selection["graded_dir"] is None
    finally:
        g.close()


def test_keep_scored_keeps_every_scored_one_and_keep_checkpoints_survives_release(
    tmp_path: Path,
) -> None:
    g = Live(tmp_path / "a", {1: 30.0, 2: 50.0, 3: 40.0}, keep_scored=True)
    try:
        for n in (1, 2, 3):
            g.submit(f"v{n}", seed=n)
        assert all(g.graded(n).is_dir() for n in (1, 2, 3))
        assert sorted(g.service.selection()["scored"]) == [1, 2, 3]
        g.service.release()
        assert not any(g.graded(n).exists() for n in (1, 2, 3))
    finally:
        g.close()
    k = Live(tmp_path / "b", {1: 30.0, 2: 50.0}, keep_checkpoints=True)
    try:
        for n in (1, 2):
            k.submit(f"v{n}", seed=n)
        k.service.release()
        assert k.graded(1).is_dir() and k.graded(2).is_dir()
    finally:
        k.close()


def test_a_restored_service_knows_the_declaration_and_its_kept_directories(
    tmp_path: Path,
) -> None:
    from autorl_grading.service import GradingService

    g = Live(tmp_path, {1: 30.0, 2: 50.0})
    try:
        g.submit("v1", seed=1)
        g.submit("v2", seed=2)
        assert g.final({"submission_id": 1}).status_code == 200
    finally:
        g.close()
    # the graded layout of a real run (the engine's base frame): <sid>/graded
    for sid in (1, 2):
        g.graded(sid).rename(g.graded(sid).parent / "graded")
    restored = GradingService(
        workspace=g.workspace,
        storage=tmp_path / "submissions",
        log=SubmissionLog(tmp_path / "resumed.jsonl"),
        clock=BudgetClock(600),
        max_submissions=8,
        baseline_score=10.0,
        base_weight_hash="sha256:base",
        evaluate=lambda *a: (0.0, {}),
    )
    try:
        assert restored.restore(read_submission_log(tmp_path / "submissions.jsonl")) == []
        selection = restored.selection()
        assert (selection["submission_id"], selection["rule"]) == (1, "declared")
        assert selection["graded_dir"] == tmp_path / "submissions" / "1" / "graded"
    finally:
        restored.close()


def test_a_declaration_leaves_the_submissions_log_clean(live: Live) -> None:
    live.submit("v1", seed=1, final=True)
    problems: list[str] = []
    entries = read_submission_log(live.root / "submissions.jsonl", problems)
    assert problems == [] and {e["status"] for e in entries} == {
        "received",
        "queued",
        "evaluating",
        "scored",
    }


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_alternating_declarations_are_bounded(live: Live) -> None:
    """Each declaration is an fsynced line and may copy a checkpoint in again: an agent
    alternating ``/final 1`` and ``/final 3`` gets 429 past the run's allowance, nothing more is
    written or copied, and its last accepted declaration stands."""
    from autorl_grading.service import DECLARATIONS_PER_SUBMISSION

    for n in (1, 2, 3):
        live.submit(f"v{n}", seed=n)
    limit = DECLARATIONS_PER_SUBMISSION * live.service.max_submissions
    answers = [live.final({"submission_id": 1 + 2 * (i % 2)}).status_code for i in range(limit + 5)]
    assert answers[:limit] == [200] * limit and answers[limit:] == [429] * 5
    declared = (live.root / "final.jsonl").read_text().splitlines()
    assert len(declared) == limit
    assert live.service.selection()["submission_id"] == json.loads(declared[-1])["submission_id"]
