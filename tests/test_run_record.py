"""The run record is the centre: the engine writes it (with the plugins' contributions), every
report only renders it, and the campaign, ``runs list`` and the results store read it, so the
reports a run renders change nothing but their own files. Runs recorded before the record had
a version still open."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from autorl_campaign.results import run_results
from autorl_records import RECORD_VERSION, load_run, summary
from autorl_runner.run import Run
from click.testing import CliRunner

from autorl.cli.main import cli
from autorl.config import RunConfig
from autorl.registry import Registry

pytestmark = pytest.mark.e2e  # real runs

OLD_RUN = Path(__file__).parent / "fixtures" / "run-v1-webshop"
ANALYSIS_FILES = ("analysis.json", "report.html", "timeline.png")


@pytest.fixture(scope="module")
def basic_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real tiny run that renders only the ``basic`` report."""
    runs = tmp_path_factory.mktemp("record-runs")
    config = RunConfig.model_validate(
        {
            "task": "gsm8k",
            "model": "tiny",
            "runs_dir": str(runs),
            "run_id": "basic-only",
            "reports": ["basic"],
            "task_options": {"train_size": 20, "eval_size": 8},
            "budget": {"wall_seconds": 30},
        }
    )
    Run(config, registry=Registry.from_entry_points(), quiet=True).execute()
    return runs / "basic-only"


@pytest.mark.e2e  # a real tiny run (basic_only)
def test_the_analysis_is_in_the_record_whichever_reports_render(basic_only: Path) -> None:
    record = load_run(basic_only)
    assert record.version == RECORD_VERSION and record.status == "completed"
    assert "analysis" in record.contributions  # a contribution, not a report's side effect
    assert not any((basic_only / "report" / f).exists() for f in ANALYSIS_FILES)
    rendered = json.loads((basic_only / "report" / "summary.json").read_text())
    assert rendered == json.loads(json.dumps(summary(record), default=str))
    assert isinstance(rendered["flagged"], bool) and "best_route" in rendered
    results = [json.loads(line) for line in (basic_only.parent / "results.jsonl").open()]
    assert results[-1]["run_id"] == "basic-only" and "flagged" in results[-1]


@pytest.mark.e2e  # a real tiny run (basic_only)
def test_rendering_the_analysis_changes_no_column_but_its_own_files(basic_only: Path) -> None:
    """Removing (here: adding) ``analysis`` among a run's reports changes no campaign column and
    no summary.json field: the analysis contributes through the record, not by rewriting."""
    summary_path = basic_only / "report" / "summary.json"
    before_summary = json.loads(summary_path.read_text())
    before_cells = run_results(basic_only)
    result = CliRunner().invoke(
        cli, ["report", str(basic_only), "-r", "basic", "-r", "analysis"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert all((basic_only / "report" / f).is_file() for f in ANALYSIS_FILES)
    assert json.loads(summary_path.read_text()) == before_summary
    assert run_results(basic_only) == before_cells
    assert "flagged" in before_cells[0] and "best_route" in before_cells[0]
    # and without it again: still the same columns
    shutil.rmtree(basic_only / "report")
    result = CliRunner().invoke(cli, ["report", str(basic_only), "-r", "basic"])
    assert result.exit_code == 0, result.output
    assert json.loads(summary_path.read_text()) == before_summary
    assert run_results(basic_only) == before_cells


def test_a_run_recorded_before_the_record_had_a_version_still_reports(tmp_path: Path) -> None:
    """A real WebShop run made before this layout (no contributions, no record_version, its
    analysis written into the basic report's files): ``autorl report`` and ``runs list``."""
    run_dir = tmp_path / "old-run"
    shutil.copytree(OLD_RUN, run_dir)
    old = json.loads((run_dir / "report" / "summary.old.json").read_text())
    record = load_run(run_dir)
    assert record.version == 1 and not record.contributions
    result = CliRunner().invoke(
        cli, ["report", str(run_dir), "-r", "basic", "-r", "analysis"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    new = json.loads((run_dir / "report" / "summary.json").read_text())
    for key in ("run_id", "protocol", "score", "score_se", "baseline", "selection_gap",
                "best_score", "end_reason", "status", "agent_seconds"):  # fmt: skip
        assert new[key] == old[key], key
    assert [s["score"] for s in new["submissions"]] == [s["score"] for s in old["submissions"]]
    assert new["record_version"] == 1 and "analysis" in new["contributions"]
    assert (run_dir / "contributions" / "analysis.json").is_file()
    listed = CliRunner().invoke(cli, ["runs", "list", "--runs-dir", str(tmp_path), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    assert [r["run_id"] for r in rows] == [old["run_id"]] and rows[0]["score"] == old["score"]
