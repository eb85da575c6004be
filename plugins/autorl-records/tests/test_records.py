"""Run records and process metrics, on run directories written by hand in the engine's format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from autorl_records import load_run, process_metrics, summary
from autorl_testing.runs import write_run_dir

from autorl.errors import AutorlError

BASE_HASH = "sha256:" + "b" * 64


def make_run(
    root: Path,
    entries: list[dict[str, Any]],
    *,
    run_id: str = "r1",
    baseline: float | None = 10.0,
    agent_seconds: float | None = 600.0,
    budget_seconds: float = 600.0,
    end_reason: str = "deadline",
    raw_tail: str = "",
) -> Path:
    """A run directory like the engine writes; ``None`` leaves baseline.json / run.json out."""
    config = {
        "task": "gsm8k",
        "agent": "scripted",
        "driver": None,
        "model": "tiny",
        "seed": 0,
        "budget": {"wall_seconds": budget_seconds, "max_submissions": 8},
        "sandbox": "isolated",
        "reports": ["basic"],
    }
    base = {"score": baseline, "n": 50, "metrics": {}, "cached": True, "seconds": 3.0}
    run_info = {
        "status": "completed",
        "started": "2026-01-02T03:04:06.000Z",
        "ended": "2026-01-02T03:14:06.000Z",
        "agent_seconds": agent_seconds,
        "budget_seconds": budget_seconds,
        "end_reason": end_reason,
        "agent_exit_code": 0,
        "error": None,
    }
    return write_run_dir(
        root / run_id,
        config=config,
        entries=entries,
        baseline=None if baseline is None else base,
        run=None if agent_seconds is None else run_info,
        submissions_tail=raw_tail,
        sandbox={"name": "isolated", "isolated": True},
        versions={"autorl": "0.1.0"},
        hashes={"train": "sha256:t", "eval": "sha256:e", "base_model": BASE_HASH},
        task={"name": "gsm8k", "version": "1", "split": "offline", "metric": "accuracy"},
    )


def received(sid: int, at: float) -> dict[str, Any]:
    return {
        "submission_id": sid,
        "status": "received",
        "time": f"t{at}",
        "elapsed_s": at,
        "model_path": f"output/v{sid}",
        "code_revision": f"rev{sid}",
    }


def scored(sid: int, at: float, score: float, **extra: Any) -> list[dict[str, Any]]:
    """received, queued, evaluating and scored entries for one evaluated submission."""
    return [
        received(sid, at),
        {"submission_id": sid, "status": "queued", "elapsed_s": at + 1, "weight_hash": f"h{sid}"},
        {"submission_id": sid, "status": "evaluating", "elapsed_s": at + 2},
        {
            "submission_id": sid,
            "status": "scored",
            "time": f"t{at + 30}",
            "elapsed_s": at + 30,
            "score": score,
            "weight_hash": f"h{sid}",
            "code_revision": f"rev{sid}",
            "copy_of_base": False,
            "eval_seconds": 28.0,
            "n": 50,
            "metrics": {"accuracy": score},
            **extra,
        },
    ]


def failed(sid: int, at: float, reason: str = "config.json missing") -> list[dict[str, Any]]:
    return [
        received(sid, at),
        {"submission_id": sid, "status": "failed", "elapsed_s": at + 1, "reason": reason},
    ]


def duplicate(sid: int, at: float, of: int, score: float | None) -> list[dict[str, Any]]:
    return [
        received(sid, at),
        {
            "submission_id": sid,
            "status": "duplicate",
            "elapsed_s": at + 1,
            "duplicate_of": of,
            "score": score,
            "weight_hash": f"h{of}",
            "reason": f"same weights as submission {of}",
        },
    ]


def test_full_run_metrics(tmp_path: Path) -> None:
    entries = [
        *scored(1, 100, 12.0),
        *failed(2, 200),
        *duplicate(3, 300, of=1, score=12.0),
        *scored(4, 400, 8.0),
        *scored(5, 500, 15.0),
    ]
    m = process_metrics(load_run(make_run(tmp_path, entries)))
    assert m["n_submissions"] == 5
    assert (m["n_scored"], m["n_failed"], m["n_duplicate"], m["n_pending"]) == (3, 1, 1, 0)
    assert m["valid_submission_rate"] == 0.8
    assert m["first_valid_idx"] == 1
    assert m["first_valid_delay_s"] == 100
    assert [(p["elapsed_s"], p["score"]) for p in m["score_trajectory"]] == [
        (100, 12.0),
        (300, 12.0),
        (400, 8.0),
        (500, 15.0),
    ]
    assert m["time_to_first_improvement_s"] == 100
    assert m["time_to_best_s"] == 500
    assert m["best_submission_id"] == 5
    assert m["monotonic_ratio"] == pytest.approx(2 / 3, abs=1e-4)
    assert m["copy_model_count"] == 0
    assert m["time_used_ratio"] == 1.0
    assert m["last_submit_gap_s"] == 100
    assert (m["baseline_score"], m["best_score"], m["improvement"]) == (10.0, 15.0, 5.0)


def test_no_submissions(tmp_path: Path) -> None:
    m = process_metrics(
        load_run(make_run(tmp_path, [], agent_seconds=300, end_reason="agent_exit"))
    )
    assert m["n_submissions"] == 0
    assert m["valid_submission_rate"] is None
    assert m["first_valid_idx"] is None and m["first_valid_delay_s"] is None
    assert m["score_trajectory"] == []
    assert m["best_score"] is None and m["improvement"] is None
    assert m["time_to_first_improvement_s"] is None and m["time_to_best_s"] is None
    assert m["monotonic_ratio"] is None
    assert m["last_submit_gap_s"] is None
    assert m["time_used_ratio"] == 0.5


def test_all_failed(tmp_path: Path) -> None:
    m = process_metrics(load_run(make_run(tmp_path, [*failed(1, 50), *failed(2, 90)])))
    assert m["valid_submission_rate"] == 0.0
    assert m["first_valid_idx"] is None
    assert m["best_score"] is None and m["improvement"] is None
    assert m["last_submit_gap_s"] == 510  # budget end (600) - last submission (90)


def test_first_valid_idx_counts_failed_submissions_before_it(tmp_path: Path) -> None:
    entries = [*failed(1, 10), *failed(2, 20), *scored(3, 30, 9.0)]
    m = process_metrics(load_run(make_run(tmp_path, entries)))
    assert (m["first_valid_idx"], m["first_valid_delay_s"]) == (3, 30)
    assert m["time_to_first_improvement_s"] is None  # 9 is below the baseline of 10
    assert m["improvement"] == -1.0


def test_copy_of_base_and_its_duplicate(tmp_path: Path) -> None:
    copy = scored(1, 60, 10.0, copy_of_base=True, weight_hash=BASE_HASH, reason="identical")
    entries = [*copy, *duplicate(2, 120, of=1, score=10.0)]
    entries[-1]["weight_hash"] = BASE_HASH
    record = load_run(make_run(tmp_path, entries))
    m = process_metrics(record)
    assert m["copy_model_count"] == 2
    assert m["valid_submission_rate"] == 1.0  # scored as the baseline: valid, but no improvement
    assert m["time_to_first_improvement_s"] is None
    assert m["improvement"] == 0.0
    assert record.submissions[1].copy_of_base  # inherited from the original


def test_duplicate_takes_the_final_score_of_its_original(tmp_path: Path) -> None:
    # the duplicate arrives while submission 1 is still evaluating: the engine logs score null
    entries = [
        received(1, 10),
        {"submission_id": 1, "status": "evaluating", "elapsed_s": 11},
        *duplicate(2, 20, of=1, score=None),
        {"submission_id": 1, "status": "scored", "elapsed_s": 60, "score": 14.0},
    ]
    record = load_run(make_run(tmp_path, entries))
    dup = record.submissions[1]
    assert (dup.status, dup.score, dup.valid) == ("duplicate", 14.0, True)
    assert process_metrics(record)["valid_submission_rate"] == 1.0


def test_duplicate_of_a_failed_submission_is_not_valid(tmp_path: Path) -> None:
    entries = [*failed(1, 10, reason="evaluation failed: boom"), *duplicate(2, 20, 1, None)]
    m = process_metrics(load_run(make_run(tmp_path, entries)))
    assert m["valid_submission_rate"] == 0.0
    assert m["best_score"] is None


def test_fold_keeps_received_time_and_every_field(tmp_path: Path) -> None:
    record = load_run(make_run(tmp_path, scored(1, 100, 12.0)))
    (sub,) = record.submissions
    assert (sub.time, sub.elapsed_s) == ("t100", 100)
    assert (sub.updated_time, sub.updated_elapsed_s) == ("t130", 130)
    assert sub.statuses == ("received", "queued", "evaluating", "scored")
    assert sub.model_path == "output/v1"
    assert (sub.weight_hash, sub.code_revision, sub.eval_seconds, sub.n) == ("h1", "rev1", 28, 50)
    assert sub.metrics == {"accuracy": 12.0}
    assert sub.fields["status"] == "scored"


def test_a_later_null_does_not_erase_a_logged_value(tmp_path: Path) -> None:
    entries = scored(1, 100, 12.0)
    entries[-1]["code_revision"] = None
    (sub,) = load_run(make_run(tmp_path, entries)).submissions
    assert sub.code_revision == "rev1"


def test_truncated_last_line_and_pending_submission(tmp_path: Path) -> None:
    entries = [*scored(1, 100, 12.0), received(2, 200)]
    torn = '{"submission_id": 2, "status": "evalu'
    run_dir = make_run(tmp_path, entries, agent_seconds=None, raw_tail=torn)
    record = load_run(run_dir)
    assert record.status == "incomplete"
    assert [s.status for s in record.submissions] == ["scored", "received"]
    assert any("line 6: truncated last line" in p for p in record.problems)
    m = process_metrics(record)
    assert m["n_pending"] == 1
    assert m["valid_submission_rate"] == 1.0  # pending submissions are not judged yet
    assert m["time_used_ratio"] is None and m["last_submit_gap_s"] is None


def test_malformed_lines_in_the_middle_are_skipped(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, [])
    lines = ["not json", "[1, 2]", json.dumps({"status": "scored"}), *map(json.dumps, failed(1, 5))]
    (run_dir / "submissions.jsonl").write_text("\n".join(lines) + "\n")
    record = load_run(run_dir)
    assert [s.submission_id for s in record.submissions] == [1]
    assert record.problems == (
        "submissions.jsonl line 1: invalid JSON ignored",
        "submissions.jsonl line 2: no integer submission_id, ignored",
        "submissions.jsonl line 3: no integer submission_id, ignored",
    )


def test_crashed_before_baseline(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, [], baseline=None, agent_seconds=None)
    (run_dir / "submissions.jsonl").unlink()
    record = load_run(run_dir)
    assert record.baseline is None and record.run is None and record.submissions == ()
    assert len(record.problems) == 2
    s = summary(record)
    assert s["status"] == "incomplete"
    assert s["baseline_score"] is None and s["improvement"] is None


def test_agent_stopped_early(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, scored(1, 100, 11.0), agent_seconds=120, end_reason="agent_exit")
    m = process_metrics(load_run(run_dir))
    assert m["time_used_ratio"] == 0.2
    assert m["last_submit_gap_s"] == 20  # agent end (120), not budget end (600)


def test_budget_falls_back_to_the_manifest(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, [])
    info = json.loads((run_dir / "run.json").read_text())
    del info["budget_seconds"]
    (run_dir / "run.json").write_text(json.dumps(info))
    assert load_run(run_dir).budget_seconds == 600.0


def test_corrupt_baseline_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, [])
    (run_dir / "baseline.json").write_text("{oops")
    record = load_run(run_dir)
    assert record.baseline is None
    assert record.problems[0].startswith("baseline.json invalid JSON")


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("absent", "run directory not found"),
        ("no-manifest", "is not an autorl run directory: manifest.json is missing"),
        ("bad-manifest", "cannot read the run manifest: invalid JSON"),
        ("list-manifest", "expected a JSON object, found list"),
    ],
)
def test_not_a_run_directory(tmp_path: Path, setup: str, message: str) -> None:
    target = tmp_path / "x"
    if setup != "absent":
        target.mkdir()
    if setup == "bad-manifest":
        (target / "manifest.json").write_text("{")
    if setup == "list-manifest":
        (target / "manifest.json").write_text("[]")
    with pytest.raises(AutorlError, match=message) as info:
        load_run(target)
    assert info.value.hint


def test_summary_content(tmp_path: Path) -> None:
    entries = [*scored(1, 100, 12.0), *failed(2, 200, reason="no weights")]
    s = summary(load_run(make_run(tmp_path, entries)))
    assert (s["run_id"], s["task"], s["agent"], s["model"], s["driver"]) == (
        "r1",
        "gsm8k",
        "scripted",
        "tiny",
        None,
    )
    assert (s["baseline_score"], s["best_score"], s["improvement"]) == (10.0, 12.0, 2.0)
    assert s["end_reason"] == "deadline"
    assert s["versions"] == {"autorl": "0.1.0"}
    assert s["hashes"]["base_model"] == BASE_HASH
    assert s["submissions"][0] == {
        "id": 1,
        "time": "t100",
        "elapsed_s": 100.0,
        "score": 12.0,
        "status": "scored",
        "valid": True,
        "weight_hash": "h1",
        "code_revision": "rev1",
        "reason": None,
        "duplicate_of": None,
        "copy_of_base": False,
        "model_path": "output/v1",
        "eval_seconds": 28.0,
        "score_se": None,
    }
    assert s["submissions"][1]["reason"] == "no weights"
    assert s["process_metrics"]["valid_submission_rate"] == 0.5
    json.dumps(s)  # serialisable as is


def test_summary_noise_from_the_evaluators_standard_errors(tmp_path: Path) -> None:
    """``score_se`` in the baseline's and the best submission's metrics gives the improvement's
    standard error; an evaluator that reports none leaves the three fields None."""
    entries = [*scored(1, 100, 12.0), *scored(2, 200, 30.0, metrics={"score_se": 4.0})]
    run_dir = make_run(tmp_path, entries)
    plain = summary(load_run(run_dir))
    assert plain["best_se"] == 4.0 and plain["baseline_se"] is None
    assert plain["improvement_se"] is None
    baseline = {"score": 10.0, "n": 50, "metrics": {"score_se": 3.0}, "cached": False}
    (run_dir / "baseline.json").write_text(json.dumps(baseline))
    s = summary(load_run(run_dir))
    assert (s["baseline_se"], s["best_se"], s["improvement_se"]) == (3.0, 4.0, 5.0)
