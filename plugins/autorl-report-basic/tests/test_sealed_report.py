"""report.md and summary.json of sealed, reference and infra_error runs (issue #31).

Run directories are written by hand in the engine's format: run.json's ``scoring`` block as
docs/reports.md describes it, and an ``infra_error`` end with its ``infra_cause``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autorl_report_basic.report import BasicReport
from autorl_testing.runs import SEALED_SCORING, write_run_dir


def write_run(root: Path, run: dict[str, Any]) -> Path:
    """Two scored submissions on dev (75 and 77.5), baseline 12 on dev; ``run`` is run.json."""
    entries = []
    for sid, score in ((1, 75.0), (2, 77.5)):
        entries += [
            {"submission_id": sid, "status": "received", "elapsed_s": sid * 60.0},
            {"submission_id": sid, "status": "scored", "score": score, "elapsed_s": sid * 61.0},
        ]
    base = {"status": "completed", "agent_seconds": 300, "budget_seconds": 600}
    return write_run_dir(
        root / "run",
        config={"task": "gsm8k", "agent": "react", "driver": "openai/gpt-5.2", "seed": 1},
        entries=entries,
        baseline={"score": 12.0, "n": 20, "metrics": {}},
        run={**base, **run},
        sandbox={"name": "isolated", "isolated": True},
        task={"name": "gsm8k", "version": "1", "split": "offline", "metric": "accuracy"},
    )


def render(run_dir: Path) -> tuple[str, dict[str, Any]]:
    BasicReport().render(run_dir, run_dir / "report")
    md = (run_dir / "report" / "report.md").read_text()
    return md, json.loads((run_dir / "report" / "summary.json").read_text())


def test_a_sealed_run_reports_test_score_dev_best_and_selection_gap(tmp_path: Path) -> None:
    md, data = render(write_run(tmp_path, {"end_reason": "agent_exit", "scoring": SEALED_SCORING}))
    for expected in (
        "| scoring | sealed (dev split for feedback, sealed test of one selected checkpoint) |",
        "| baseline (test, 20 examples) | 10.00 ± 3.00 |",
        "| selected submission #1, sealed test score | 70.00 ± 7.20 |",
        "| improvement (test) | +60.00 ± 7.80 |",
        "| dev best (20 examples) | 77.50 |",
        "| selection gap (dev - test of the selected) | +5.00 ± 9.90 |",
        "| oracle gap (best on test - selected) | +2.50 |",
        "| baseline (dev, what the agent saw) | 12.00 |",
        "Protocol **sealed**",
        "Selection rule: declared final by the agent.",
        "| # | submitted | status | dev score |",
        "**selected** (test 70.00 ± 7.20)",
    ):
        assert expected in md, f"missing from report.md: {expected!r}"
    assert "HARNESS FAILURE" not in md
    assert (data["protocol"], data["score"], data["selection_gap"]) == ("sealed", 70.0, 5.0)


def test_a_run_without_a_scoring_block_reports_as_reference(tmp_path: Path) -> None:
    md, data = render(write_run(tmp_path, {"end_reason": "deadline"}))
    assert "| best valid submission | 77.50 |" in md and "| improvement | +65.50 |" in md
    assert "Protocol **reference**" in md
    assert "| scoring | reference (every submission on the whole held-out split" in md
    assert (data["protocol"], data["score"], data["baseline"]) == ("reference", 77.5, 12.0)


def test_an_infra_error_run_says_the_harness_failed(tmp_path: Path) -> None:
    cause = "grader drain timeout <img src=x> | evil |"
    md, data = render(
        write_run(tmp_path, {"status": "failed", "end_reason": "infra_error", "infra_cause": cause})
    )
    assert "> **HARNESS FAILURE (infra_error): this run is not an agent result.**" in md
    assert "grader drain timeout &lt;img src=x&gt; \\| evil \\|" in md  # the cause is inert
    assert "<img" not in md
    assert "End reason: **infra_error** (the harness failed" in md
    assert data["infra_cause"] == cause and data["end_reason"] == "infra_error"


def test_a_hostile_selection_rule_is_inert(tmp_path: Path) -> None:
    block = dict(SEALED_SCORING, selection={"submission_id": 1, "rule": "<script>x</script> | a |"})
    md, _ = render(write_run(tmp_path, {"end_reason": "agent_exit", "scoring": block}))
    assert "<script>" not in md and "&lt;script&gt;" in md
