"""The run's score as the harness sealed it: sealed, reference, old-format and infra_error runs
read back into the summary, ``autorl runs list`` and ``autorl report``'s result line.

The run directories are written by hand in the engine's format (run.json's ``scoring`` block, as
docs/reports.md describes it), so these tests hold the reader to the schema, not to an engine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from autorl_records import load_run, scoring, summary
from autorl_records.commands import _result_line, runs
from autorl_testing.runs import SEALED_SCORING, write_run_dir
from click.testing import CliRunner


def scored(sid: int, at: float, score: float, se: float | None = None) -> list[dict[str, Any]]:
    metrics: dict[str, Any] = {"accuracy": score} | ({"score_se": se} if se is not None else {})
    return [
        {"submission_id": sid, "status": "received", "time": f"t{at}", "elapsed_s": at},
        {
            "submission_id": sid,
            "status": "scored",
            "elapsed_s": at + 30,
            "score": score,
            "weight_hash": f"h{sid}",
            "n": 20,
            "metrics": metrics,
        },
    ]


def write_run(
    root: Path,
    run_id: str,
    *,
    scoring_block: dict[str, Any] | None = None,
    protocol: str | None = None,
    end_reason: str = "agent_exit",
    extra: dict[str, Any] | None = None,
    finished: bool = True,
    baseline: float = 12.0,
    baseline_se: float | None = 3.5,
) -> Path:
    """A run directory as the engine writes it: two scored submissions (75 and 77.5 on dev)."""
    config: dict[str, Any] = {"task": "gsm8k", "agent": "scripted", "model": "tiny", "seed": 0}
    config["budget"] = {"wall_seconds": 600, "max_submissions": 8}
    if protocol is not None:
        config["scoring"] = {"protocol": protocol, "test_all": False}
    metrics = {"score_se": baseline_se} if baseline_se is not None else {}
    info: dict[str, Any] = {
        "status": "completed",
        "started": "2026-01-02T03:04:06.000Z",
        "ended": "2026-01-02T03:14:06.000Z",
        "agent_seconds": 500.0,
        "budget_seconds": 600.0,
        "end_reason": end_reason,
        "agent_exit_code": 0,
        "error": None,
        **(extra or {}),
    }
    if scoring_block is not None:
        info["scoring"] = scoring_block
    return write_run_dir(
        root / run_id,
        config=config,
        entries=[*scored(1, 100, 75.0, se=6.8), *scored(2, 200, 77.5, se=6.6)],
        baseline={"score": baseline, "n": 20, "metrics": metrics, "cached": False},
        run=info if finished else None,
        sandbox={"name": "isolated", "isolated": True},
        task={"name": "gsm8k", "version": "1", "split": "offline", "metric": "accuracy"},
        hashes={"eval": "sha256:dev", "test": "sha256:test"},
    )


def test_a_sealed_run_reads_its_score_from_the_scoring_block(tmp_path: Path) -> None:
    s = summary(load_run(write_run(tmp_path, "sealed", scoring_block=SEALED_SCORING)))
    assert s["protocol"] == "sealed"
    assert (s["score"], s["score_se"], s["baseline"], s["test_baseline_se"]) == (
        70.0,
        7.2,
        10.0,
        3.0,
    )
    assert (s["improvement"], s["improvement_se"]) == (60.0, 7.8)
    assert (s["dev_best"], s["best_score"]) == (77.5, 77.5)  # best_score stays: the dev best
    assert (s["selected_submission"], s["selection_rule"]) == (1, "declared")
    assert (s["selection_gap"], s["selection_gap_se"], s["oracle_gap"]) == (5.0, 9.9, 2.5)
    assert (s["test_n"], s["dev_n"], s["infra_cause"]) == (20, 20, None)
    # the dev baseline (baseline.json, what the agent saw) keeps its own fields
    assert (s["baseline_score"], s["baseline_se"]) == (12.0, 3.5)
    assert s["schema_version"] == 2
    json.dumps(s)


def test_a_reference_run_from_the_engine(tmp_path: Path) -> None:
    block = {
        "protocol": "reference",
        "selection": {"submission_id": 2, "rule": "best"},
        "dev": {"best": 77.5, "selected": 77.5, "selected_se": 6.6, "n": 40},
        "score": 77.5,
        "score_se": 6.6,
        "baseline": 12.0,
        "baseline_se": 3.5,
        "improvement": 65.5,
        "improvement_se": 7.47,
    }
    s = summary(load_run(write_run(tmp_path, "ref", scoring_block=block)))
    assert (s["protocol"], s["score"], s["baseline"], s["improvement"]) == (
        "reference",
        77.5,
        12.0,
        65.5,
    )
    assert (s["selected_submission"], s["selection_rule"], s["dev_n"]) == (2, "best", 40)
    assert s["selection_gap"] is None and s["test_n"] is None and s["test_baseline_se"] is None


def test_an_old_run_reads_as_reference_with_unchanged_numbers(tmp_path: Path) -> None:
    """No scoring block (recorded before sealed scoring): the score is the best submission."""
    s = summary(load_run(write_run(tmp_path, "old")))
    assert s["protocol"] == "reference"
    assert (s["score"], s["best_score"], s["dev_best"]) == (77.5, 77.5, 77.5)
    assert (s["baseline"], s["baseline_score"]) == (12.0, 12.0)
    assert s["improvement"] == 65.5
    assert (s["score_se"], s["best_se"], s["baseline_se"]) == (6.6, 6.6, 3.5)
    assert s["improvement_se"] == round((6.6**2 + 3.5**2) ** 0.5, 4)
    assert (s["selected_submission"], s["selection_rule"], s["dev_n"]) == (2, "best", 20)
    assert (s["selection_gap"], s["test_n"], s["oracle_gap"], s["infra_cause"]) == (
        None,
        None,
        None,
        None,
    )


def test_a_sealed_run_has_no_score_until_its_test_is_scored(tmp_path: Path) -> None:
    """In progress (no run.json), the configured protocol holds and nothing claims a score."""
    r = scoring(load_run(write_run(tmp_path, "running", protocol="sealed", finished=False)))
    assert r["protocol"] == "sealed"
    assert (r["score"], r["baseline"], r["improvement"]) == (None, None, None)
    assert (r["dev_best"], r["dev_n"]) == (77.5, 20)


def test_no_scored_submission_has_no_score(tmp_path: Path) -> None:
    block = {
        "protocol": "sealed",
        "selection": {"submission_id": None, "rule": "none"},
        "dev": {"best": None, "n": 20},
        "test": {"n": 20, "baseline": 10.0, "baseline_se": 3.0},
        "score": None,
        "baseline": 10.0,
        "baseline_se": 3.0,
        "improvement": None,
    }
    s = summary(load_run(write_run(tmp_path, "none", scoring_block=block)))
    assert (s["score"], s["improvement"], s["selection_rule"], s["baseline"]) == (
        None,
        None,
        "none",
        10.0,
    )
    assert s["dev_best"] is None


def test_an_infra_error_run_names_its_cause(tmp_path: Path) -> None:
    extra = {"infra_cause": "sandbox could not start: bwrap: No permissions", "status": "failed"}
    run_dir = write_run(tmp_path, "infra", end_reason="infra_error", extra=extra, protocol="sealed")
    record = load_run(run_dir)
    s = summary(record)
    assert (s["end_reason"], s["status"]) == ("infra_error", "failed")
    assert s["infra_cause"] == "sandbox could not start: bwrap: No permissions"
    assert s["score"] is None  # never sealed: no agent result
    line = _result_line(record)
    assert "infra_error, not an agent result: sandbox could not start" in line


def test_an_infra_error_without_a_cause_still_says_so(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "bare", end_reason="infra_error")
    assert summary(load_run(run_dir))["infra_cause"].startswith("unknown")


def test_hostile_values_in_the_scoring_block_are_not_numbers(tmp_path: Path) -> None:
    block = dict(SEALED_SCORING, score="70; rm -rf", score_se=-1, selection="declared", test=[1])
    s = summary(load_run(write_run(tmp_path, "odd", scoring_block=block)))
    assert (s["score"], s["score_se"], s["selected_submission"], s["test_n"]) == (
        None,
        None,
        None,
        None,
    )


@pytest.fixture
def mixed_root(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    write_run(root, "sealed-run", scoring_block=SEALED_SCORING)
    write_run(root, "old-run")
    write_run(
        root,
        "infra-run",
        end_reason="infra_error",
        extra={"infra_cause": "grader drain timeout [red]x[/red]"},
    )
    return root


def test_runs_list_json_shows_protocol_score_and_gap(mixed_root: Path) -> None:
    result = CliRunner().invoke(runs, ["list", "--runs-dir", str(mixed_root), "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["run_id"]: r for r in json.loads(result.output)}
    sealed, old, infra = rows["sealed-run"], rows["old-run"], rows["infra-run"]
    assert (sealed["protocol"], sealed["baseline"], sealed["score"], sealed["score_se"]) == (
        "sealed",
        10.0,
        70.0,
        7.2,
    )
    assert (sealed["improvement"], sealed["best"], sealed["selection_gap"]) == (60.0, 77.5, 5.0)
    assert (old["protocol"], old["score"], old["baseline"], old["improvement"]) == (
        "reference",
        77.5,
        12.0,
        65.5,
    )
    assert (infra["end_reason"], infra["infra_cause"]) == (
        "infra_error",
        "grader drain timeout [red]x[/red]",
    )


def test_runs_list_table_shows_the_sealed_columns_and_infra_errors(mixed_root: Path) -> None:
    result = CliRunner().invoke(runs, ["list", "--runs-dir", str(mixed_root)])
    assert result.exit_code == 0, result.output
    out = result.output
    header = next(line for line in out.splitlines() if "run id" in line)
    for column in ("protocol", "baseline", "score ± SE", "improvement ± SE", "sel. gap", "end"):
        assert column in header, header
    sealed = next(line for line in out.splitlines() if "sealed-run" in line)
    for text in ("sealed", "10.00", "70.00 ± 7.20", "+60.00 ± 7.80", "77.50", "+5.00 ± 9.90"):
        assert text in sealed, sealed
    infra = next(line for line in out.splitlines() if "infra-run" in line)
    assert "infra_error: grader drain timeout" in infra
    assert "[red]x[/red]" in out  # markup in a cause is shown, not interpreted
    assert "not an agent result" in out
