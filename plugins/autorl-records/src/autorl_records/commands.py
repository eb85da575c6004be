"""``autorl report RUN_DIR`` and ``autorl runs list``: results read back from the harness records.

Both read only what the harness wrote (through :mod:`autorl_records`), so they work on finished,
crashed and still-running runs alike; rich and the typed record (pydantic) are imported only
when a table is printed or a run is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from autorl.cli import echoed_json_or_none
from autorl.errors import AutorlError
from autorl.text import sanitize

DEFAULT_RUNS_DIR = Path("runs")


def _path_option(*names: str, directory: bool, help: str) -> Callable[[Any], Any]:
    """An optional path option (None unless given): a directory, or a file when not
    ``directory``; click refuses the other kind with its own message."""
    kind = click.Path(path_type=Path, file_okay=not directory, dir_okay=directory)
    return click.option(*names, type=kind, default=None, help=help)


# autorl report ------------------------------------------------------------------------------------


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--report",
    "-r",
    "reports",
    multiple=True,
    metavar="NAME",
    help="Report plugin to render (repeatable). Default: the run's configured reports, or basic.",
)
@_path_option(
    "--out", "out_dir", directory=True, help="Where to write the files. Default: RUN_DIR/report."
)
def report(run_dir: Path, reports: tuple[str, ...], out_dir: Path | None) -> None:
    """Re-render the report of a run (finished, crashed or in progress) from its records."""
    from autorl_runner.finish import contribute

    from autorl.registry import get_registry
    from autorl_records.records import load_run

    record = load_run(run_dir)
    names = list(reports) or _configured_reports(record.config) or ["basic"]
    out_dir = out_dir or run_dir / "report"
    registry = get_registry()
    for name in names:  # resolve every name first: a typo fails before anything is written
        registry.get("report", name)
    failures: list[str] = []
    if record.status != "running":  # the plugins' results anew (a run from before them too)
        for problem in contribute(run_dir, record.run_id, registry):
            failures.append(f"{problem.plugin}: {sanitize(problem.message, 500)}")
        record = load_run(run_dir)
    for name in names:
        try:
            paths = registry.create("report", name).render(run_dir, out_dir)
        except AutorlError:
            raise
        except Exception as exc:
            # the error can quote what the report read: inert and bounded on the terminal
            failures.append(f"{name}: {type(exc).__name__}: {sanitize(exc, 500)}")
            continue
        click.echo(f"report {name}:")
        for path in paths:
            click.echo(f"  {path}")
    click.echo(_result_line(record))
    for problem in record.problems:
        click.echo(f"note: {problem}", err=True)
    if failures:
        raise AutorlError(
            f"{len(failures)} report(s) failed on {run_dir}:\n  " + "\n  ".join(failures),
            hint="run again with --debug for details, or choose other reports with --report",
        )


def _configured_reports(config: dict[str, Any]) -> list[str]:
    value = config.get("reports")
    return [str(v) for v in value] if isinstance(value, list) else []


def _result_line(record: Any) -> str:
    from autorl_records.records import process_metrics, scoring

    m = process_metrics(record)
    r = scoring(record, m)
    counts = f"({m['n_valid']} valid of {m['n_submissions']} submissions)"
    if r["infra_cause"] is not None:
        return (
            f"{record.run_id} [{record.status}]: infra_error, not an agent result: "
            f"{r['infra_cause']} {counts}"
        )
    if r["protocol"] == "sealed":
        return (
            f"{record.run_id} [{record.status}] sealed: baseline (test) {_num(r['baseline'])}, "
            f"score (test) {_with_se(r['score'], r['score_se'])}, improvement "
            f"{_with_se(r['improvement'], r['improvement_se'], signed=True)}, dev best "
            f"{_num(r['dev_best'])}, selection gap "
            f"{_with_se(r['selection_gap'], r['selection_gap_se'], signed=True)} " + counts
        )
    return (
        f"{record.run_id} [{record.status}]: baseline {_num(m['baseline_score'])}, "
        f"best {_num(m['best_score'])}, improvement {_num(m['improvement'], signed=True)} " + counts
    )


# autorl runs list ---------------------------------------------------------------------------------


@click.group()
def runs() -> None:
    """Inspect the runs in a runs directory."""


@runs.command("list")
@_path_option(
    "--runs-dir",
    directory=True,
    help="Directory holding the runs. Default: runs_dir of --config, else ./runs.",
)
@_path_option(
    "--config",
    "config_path",
    directory=False,
    help="Run config (TOML/YAML) whose runs_dir to list.",
)
@click.option("--task", default=None, help="Only runs of this task.")
@click.option("--agent", default=None, help="Only runs of this agent.")
@click.option("--campaign", default=None, help="Only runs of this campaign.")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=None, help="Newest N only.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (a JSON array).")
def runs_list(
    runs_dir: Path | None,
    config_path: Path | None,
    task: str | None,
    agent: str | None,
    campaign: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """Every run, newest first: task, agent, model, status, protocol, baseline, score (sealed
    test score of the selected checkpoint, or the best under reference) with its SE, improvement,
    dev best, selection gap and end reason (infra_error runs name their cause)."""
    root = _runs_root(runs_dir, config_path)
    rows = [
        r
        for r in collect_runs(root)
        if (task is None or r["task"] == task)
        and (agent is None or r["agent"] == agent)
        and (campaign is None or r["campaign"] == campaign)
    ]
    rows = rows[:limit] if limit else rows
    if echoed_json_or_none(rows, as_json, f"no runs in {root}"):
        return
    _print_table(rows, root)


def _runs_root(runs_dir: Path | None, config_path: Path | None) -> Path:
    if runs_dir is None and config_path is not None:
        from autorl.config import load_config

        runs_dir = load_config(config_path).runs_dir
    root = runs_dir or DEFAULT_RUNS_DIR
    if not root.is_dir():
        raise AutorlError(
            f"runs directory not found: {root}",
            hint="pass --runs-dir DIR (where 'autorl run' wrote its runs), or start a run first",
        )
    return root


def collect_runs(root: Path) -> list[dict[str, Any]]:
    """One row per run directory under ``root``, newest first; unreadable runs are kept."""
    rows = []
    for child in root.iterdir():
        if not child.is_dir():
            continue
        if (child / "manifest.json").exists():
            rows.append(_row(child))
        elif (child / "events.jsonl").exists() or (child / "run.json").exists():
            rows.append(_early_failure_row(child))
    return sorted(rows, key=lambda r: r["created"] or "", reverse=True)


def _row(run_dir: Path) -> dict[str, Any]:
    # the typed record (pydantic) is imported when a run is read, not when the CLI starts
    from autorl_records.records import load_run, process_metrics, scoring

    try:
        record = load_run(run_dir)
    except AutorlError as exc:
        return _blank_row(run_dir, status="unreadable", error=exc.message)
    m = process_metrics(record)
    r = scoring(record, m)
    return {
        "run_id": record.run_id,
        "path": str(run_dir),
        "task": record.task,
        "agent": record.agent,
        "driver": record.driver,
        "model": record.model,
        "seed": record.config.get("seed"),
        "campaign": _label(record.config, "campaign"),
        "status": record.status,
        "end_reason": record.run.end_reason if record.run is not None else None,
        "infra_cause": r["infra_cause"],
        "protocol": r["protocol"],
        "baseline": r["baseline"],
        "score": r["score"],
        "score_se": r["score_se"],
        "improvement": r["improvement"],
        "improvement_se": r["improvement_se"],
        "best": m["best_score"],
        "selection_gap": r["selection_gap"],
        "selection_gap_se": r["selection_gap_se"],
        "submissions": m["n_submissions"],
        "valid": m["n_valid"],
        "created": _str(record.manifest.get("created")) or _mtime(run_dir),
        "error": record.run.error if record.run is not None else None,
        "flagged": any(c.summary.get("flagged") is True for c in record.contributions.values()),
    }


def _early_failure_row(run_dir: Path) -> dict[str, Any]:
    """A run that stopped before writing its manifest: show why, from run.json if any."""
    status, error, created = "incomplete", "no manifest.json: the run stopped while preparing", None
    try:
        info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        status = str(info.get("status") or status)
        error = str(info.get("error") or error)
        created = _str(info.get("started"))
    except (OSError, ValueError, AttributeError):
        pass
    return _blank_row(run_dir, status=status, error=error, created=created)


def _blank_row(
    run_dir: Path, *, status: str, error: str, created: str | None = None
) -> dict[str, Any]:
    return {
        "run_id": run_dir.name,
        "path": str(run_dir),
        "task": None,
        "agent": None,
        "driver": None,
        "model": None,
        "seed": None,
        "campaign": None,
        "status": status,
        "end_reason": None,
        "infra_cause": None,
        "protocol": None,
        "baseline": None,
        "score": None,
        "score_se": None,
        "improvement": None,
        "improvement_se": None,
        "best": None,
        "selection_gap": None,
        "selection_gap_se": None,
        "submissions": 0,
        "valid": 0,
        "created": created or _mtime(run_dir),
        "error": error,
        "flagged": False,
    }


def _print_table(rows: list[dict[str, Any]], root: Path) -> None:
    from rich.table import Table

    from autorl.text import terminal

    table = Table(title=f"runs in {root}", title_justify="left")
    table.add_column("run id", overflow="fold")
    for name in ("task", "agent", "driver", "model", "seed", "campaign", "status", "protocol"):
        table.add_column(name, overflow="fold")
    for name in ("baseline", "score ± SE", "improvement ± SE", "dev best", "sel. gap", "subs"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("end", overflow="fold")
    table.add_column("created (UTC)", no_wrap=True)
    for r in rows:
        imp = r["improvement"]
        colour = "green" if imp and imp > 0 else "red" if imp and imp < 0 else ""
        status = r["status"] if r["status"] == "completed" else f"[yellow]{r['status']}[/]"
        status += " [bold red]FLAGGED[/]" if r["flagged"] else ""
        shown_imp = _with_se(imp, r["improvement_se"], signed=True)
        end = _escape(r["end_reason"] or "-")
        if r["infra_cause"] is not None:  # a harness failure: no agent result to show
            cause = _escape(_clip(r["infra_cause"], 80))
            end = f"[bold red]infra_error[/]: {cause} (not an agent result)"
        table.add_row(
            _escape(r["run_id"]),
            _escape(r["task"] or "-"),
            _escape(r["agent"] or "-"),
            _escape(r["driver"] or "-"),
            _escape(r["model"] or "-"),
            "-" if r["seed"] is None else str(r["seed"]),
            _escape(r["campaign"] or "-"),
            status,
            _escape(r["protocol"] or "-"),
            _num(r["baseline"]),
            _with_se(r["score"], r["score_se"]),
            f"[{colour}]{shown_imp}[/]" if colour else shown_imp,
            _num(r["best"]),
            _with_se(r["selection_gap"], r["selection_gap_se"], signed=True),
            f"{r['valid']}/{r['submissions']}",
            end,
            (r["created"] or "-")[:16].replace("T", " "),
        )
    console = terminal()
    if not console.is_terminal:  # piped or captured: do not squeeze the table to 80 columns
        console.width = 260
    console.print(table)


# formatting ---------------------------------------------------------------------------------------


def _label(config: dict[str, Any], key: str) -> str | None:
    labels = config.get("labels")
    value = labels.get(key) if isinstance(labels, dict) else None
    return str(value) if value is not None else None


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def _with_se(value: float | None, se: float | None, signed: bool = False) -> str:
    """``70.00 ± 7.20``; the value alone without an SE."""
    text = _num(value, signed)
    return text if value is None or se is None else f"{text} ± {se:.2f}"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _escape(text: str) -> str:
    """Rich markup in a recorded name or cause is shown as text, never interpreted."""
    from rich.markup import escape

    return escape(text)


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _mtime(path: Path) -> str:
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
