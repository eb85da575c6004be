"""``autorl report`` and ``autorl runs list`` on run directories written in the engine's format."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from autorl_records import summary
from autorl_records.commands import report, runs
from autorl_testing.runs import write_run_dir
from click.testing import CliRunner

from autorl import hookimpl
from autorl.cli.main import cli
from autorl.specs import ReportSpec


def write_run(
    root: Path,
    run_id: str,
    *,
    created: str,
    task: str = "gsm8k",
    agent: str = "scripted",
    scores: tuple[float, ...] = (),
    reports: list[str] | None = None,
    finished: bool = True,
    seed: int = 0,
    campaign: str | None = None,
) -> Path:
    config = {
        "task": task,
        "agent": agent,
        "driver": None,
        "model": "tiny",
        "seed": seed,
        "budget": {"wall_seconds": 600, "max_submissions": 8},
        "sandbox": "local",
    }
    if campaign is not None:
        config["labels"] = {"campaign": campaign, "cell": f"cell-{seed}"}
    if reports is not None:
        config["reports"] = reports
    lines = []
    for i, score in enumerate(scores, start=1):
        lines.append({"submission_id": i, "status": "received", "elapsed_s": 60.0 * i})
        lines.append(
            {"submission_id": i, "status": "scored", "elapsed_s": 60.0 * i + 5, "score": score}
        )
    run = {
        "status": "completed",
        "agent_seconds": 600,
        "budget_seconds": 600,
        "end_reason": "deadline",
        "agent_exit_code": None,
        "error": None,
    }
    return write_run_dir(
        root / run_id,
        config=config,
        entries=lines,
        baseline={"score": 10.0, "n": 20},
        run=run if finished else None,
        created=created,
        versions={},
        hashes={},
        task={"name": task, "version": "1", "split": "s", "metric": "m"},
    )


class SummaryOnlyReport:
    """A real, minimal report: writes the summary the harness records give."""

    name = "summary-only"

    def render(self, run_dir: Path, out_dir: Path) -> list[Path]:
        from autorl_records import load_run

        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / "summary-only.json"
        path.write_text(json.dumps(summary(load_run(run_dir))))
        return [path]


class BrokenReport:
    name = "broken"

    def render(self, run_dir: Path, out_dir: Path) -> list[Path]:
        raise RuntimeError("disk full")


class QuotingReport:
    """Fails quoting an agent-written file name (escape sequences, a forged line)."""

    name = "quoting"

    def render(self, run_dir: Path, out_dir: Path) -> list[Path]:
        raise OSError("cannot read \x1b]0;pwned\x07\x1b[2Jbad\nsubmission 9: scored 99.90")


@pytest.fixture
def reports_plugin(register_plugin: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    """An in-process plugin supplying the two reports above."""
    module = types.ModuleType("autorl_test_reports")
    module.SummaryOnlyReport = SummaryOnlyReport  # type: ignore[attr-defined]
    module.BrokenReport = BrokenReport  # type: ignore[attr-defined]
    module.QuotingReport = QuotingReport  # type: ignore[attr-defined]

    @hookimpl
    def autorl_register_reports() -> list[ReportSpec]:
        return [
            ReportSpec(name="summary-only", factory="autorl_test_reports:SummaryOnlyReport"),
            ReportSpec(name="broken", factory="autorl_test_reports:BrokenReport"),
            ReportSpec(name="quoting", factory="autorl_test_reports:QuotingReport"),
        ]

    module.autorl_register_reports = autorl_register_reports  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    register_plugin("autorl_records.plugin")  # ``autorl report`` and ``autorl runs``
    return register_plugin(module, name="autorl-test-reports")


# autorl report ------------------------------------------------------------------------------------


def test_report_renders_the_configured_reports(tmp_path: Path, reports_plugin: Any) -> None:
    run_dir = write_run(
        tmp_path,
        "r1",
        created="2026-01-01T00:00:00Z",
        scores=(12.0, 15.5),
        reports=["summary-only"],
    )
    result = CliRunner().invoke(report, [str(run_dir)])
    assert result.exit_code == 0, result.output
    written = run_dir / "report" / "summary-only.json"
    assert str(written) in result.output
    assert json.loads(written.read_text())["best_score"] == 15.5
    assert "r1 [completed]: baseline 10.00, best 15.50, improvement +5.50" in result.output
    assert "(2 valid of 2 submissions)" in result.output


def test_report_option_and_out_dir(tmp_path: Path, reports_plugin: Any) -> None:
    run_dir = write_run(tmp_path, "r1", created="2026-01-01T00:00:00Z", reports=["nonexistent"])
    out = tmp_path / "elsewhere"
    result = CliRunner().invoke(report, [str(run_dir), "-r", "summary-only", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "summary-only.json").is_file()
    assert "improvement -" in result.output  # no submissions: no improvement


def test_report_defaults_to_basic(tmp_path: Path, register_plugin: Callable[..., Any]) -> None:
    register_plugin("autorl_report_basic.plugin")
    run_dir = write_run(tmp_path, "r1", created="2026-01-01T00:00:00Z", scores=(11.0,))
    result = CliRunner().invoke(report, [str(run_dir)])
    assert result.exit_code == 0, result.output
    for name in ("summary.json", "report.md", "score_over_time.png"):
        assert (run_dir / "report" / name).is_file()


def test_report_errors_are_clean_messages(tmp_path: Path, reports_plugin: Any) -> None:
    run_dir = write_run(tmp_path, "r1", created="2026-01-01T00:00:00Z")
    cases = [
        (["report", str(tmp_path)], "is not an autorl run directory: manifest.json is missing"),
        (["report", str(tmp_path / "nope")], "run directory not found"),
        (["report", str(run_dir), "-r", "summary-onyl"], "unknown report 'summary-onyl'"),
        (["report", str(run_dir), "-r", "broken"], "broken: RuntimeError: disk full"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output


def test_a_report_error_quoting_agent_text_reaches_the_terminal_inert(
    tmp_path: Path, reports_plugin: Any
) -> None:
    run_dir = write_run(tmp_path, "r1", created="2026-01-01T00:00:00Z")
    result = CliRunner().invoke(cli, ["report", str(run_dir), "-r", "quoting"])
    assert result.exit_code == 2 and "quoting: OSError: cannot read" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert not any(line.startswith("submission 9") for line in result.output.splitlines())


def test_a_broken_report_does_not_stop_the_others(tmp_path: Path, reports_plugin: Any) -> None:
    run_dir = write_run(tmp_path, "r1", created="2026-01-01T00:00:00Z")
    result = CliRunner().invoke(cli, ["report", str(run_dir), "-r", "broken", "-r", "summary-only"])
    assert result.exit_code == 2
    assert (run_dir / "report" / "summary-only.json").is_file()


# autorl runs list ---------------------------------------------------------------------------------


@pytest.fixture
def runs_root(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    write_run(root, "old", created="2026-01-01T00:00:00.000Z", scores=(9.0,), seed=3)
    write_run(
        root,
        "new",
        created="2026-03-01T00:00:00.000Z",
        task="humaneval",
        scores=(14.0,),
        campaign="demo",
    )
    write_run(root, "mid", created="2026-02-01T00:00:00.000Z", agent="react", finished=False)
    early = root / "early"
    early.mkdir()
    (early / "events.jsonl").write_text("{}\n")
    (early / "run.json").write_text(
        json.dumps(
            {"status": "failed", "started": "2025-12-01T00:00:00.000Z", "error": "task not found"}
        )
    )
    (root / "not-a-run").mkdir()
    (root / "results.jsonl").write_text("{}\n")
    return root


def test_runs_list_json_newest_first(runs_root: Path) -> None:
    result = CliRunner().invoke(runs, ["list", "--runs-dir", str(runs_root), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["run_id"] for r in rows] == ["new", "mid", "old", "early"]
    new, mid, old, early = rows
    assert (new["task"], new["baseline"], new["best"], new["improvement"]) == (
        "humaneval",
        10.0,
        14.0,
        4.0,
    )
    assert (old["best"], old["improvement"], old["seed"], old["campaign"]) == (9.0, -1.0, 3, None)
    assert (new["seed"], new["campaign"], new["driver"]) == (0, "demo", None)
    assert (mid["status"], mid["agent"], mid["best"]) == ("incomplete", "react", None)
    assert (early["status"], early["error"]) == ("failed", "task not found")


def test_runs_list_filters(runs_root: Path) -> None:
    args = ["list", "--runs-dir", str(runs_root), "--json"]
    by_task = json.loads(CliRunner().invoke(runs, [*args, "--task", "gsm8k"]).output)
    assert [r["run_id"] for r in by_task] == ["mid", "old"]
    by_agent = json.loads(CliRunner().invoke(runs, [*args, "--agent", "react"]).output)
    assert [r["run_id"] for r in by_agent] == ["mid"]
    by_campaign = json.loads(CliRunner().invoke(runs, [*args, "--campaign", "demo"]).output)
    assert [r["run_id"] for r in by_campaign] == ["new"]
    newest = json.loads(CliRunner().invoke(runs, [*args, "-n", "1"]).output)
    assert [r["run_id"] for r in newest] == ["new"]


def test_runs_list_table(runs_root: Path) -> None:
    result = CliRunner().invoke(runs, ["list", "--runs-dir", str(runs_root)])
    assert result.exit_code == 0, result.output
    for text in ("new", "humaneval", "+4.00", "-1.00", "incomplete", "2026-03-01 00:00", "demo"):
        assert text in result.output, result.output
    assert result.output.index("new") < result.output.index("old")
    header = next(line for line in result.output.splitlines() if "run id" in line)
    assert all(column in header for column in ("driver", "seed", "campaign"))


def test_runs_list_uses_the_config_runs_dir(runs_root: Path, tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(f'runs_dir = "{runs_root}"\n')
    result = CliRunner().invoke(runs, ["list", "--config", str(config), "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)) == 4


def test_runs_list_empty_and_missing(tmp_path: Path) -> None:
    result = CliRunner().invoke(runs, ["list", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 0 and "no runs in" in result.output
    result = CliRunner().invoke(cli, ["runs", "list", "--runs-dir", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "runs directory not found" in result.output and "Traceback" not in result.output


def test_importing_the_commands_stays_light() -> None:
    from autorl_testing.helpers import heavy_modules_imported_by

    assert (
        heavy_modules_imported_by("autorl_records.commands", ("rich", "pydantic", "matplotlib"))
        == []
    )
