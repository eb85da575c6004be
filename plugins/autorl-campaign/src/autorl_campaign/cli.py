"""``autorl campaign run FILE`` (``--dry-run``, ``--resume``) and ``autorl campaign status DIR``."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from autorl.errors import ConfigError


def _pairs(pairs: tuple[str, ...], flag: str) -> dict[str, Any]:
    from autorl_runner.cli import parse_options

    return parse_options(pairs, flag)


@click.group()
def campaign() -> None:
    """Campaigns: many runs (agents x drivers x tasks x models x seeds...) from one file."""


@campaign.command("run")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Check every cell and print the plan; run nothing.")
@click.option(
    "--resume",
    is_flag=True,
    help="Run what is left: pending, failed, interrupted and infra_error cells (a new attempt "
    "each; completed cells never run again).",
)
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), help="Campaign directory.")
@click.option("--executor", help="Override [campaign] executor (local, pool, ray...).")
@click.option(
    "--executor-option", multiple=True, metavar="KEY=VALUE", help="Override an executor option."
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a shared run option (dotted for nested ones); an error if it is an axis.",
)
@click.option(
    "--verbose",
    is_flag=True,
    help="Also print libraries' log lines (Ray's...), which go to <campaign>/logs/campaign.log.",
)
def run(
    file: Path,
    dry_run: bool,
    resume: bool,
    out: Path | None,
    executor: str | None,
    executor_option: tuple[str, ...],
    sets: tuple[str, ...],
    verbose: bool,
) -> None:
    """Run the campaign FILE: every cell checked first, then run by its executor, each result
    stored as it ends (campaign.sqlite in the campaign directory)."""
    from dataclasses import replace

    from autorl.registry import get_registry
    from autorl_campaign.runner import run_campaign
    from autorl_campaign.spec import load_campaign
    from autorl_campaign.validate import check_campaign, problems_text

    camp = load_campaign(file, overrides=_pairs(sets, "--set"), out_dir=out)
    if executor and executor != camp.executor:  # the file's options were for its executor
        camp = replace(camp, executor=executor, executor_options={})
    if executor_option:
        camp = replace(
            camp,
            executor_options={
                **camp.executor_options,
                **_pairs(executor_option, "--executor-option"),
            },
        )
    registry = get_registry()
    # an executor checks its options before it starts anything: with no jobs, that is all
    list(
        registry.create("executor", camp.executor).as_completed(
            _nothing, [], [], camp.executor_options
        )
    )
    for note in camp.notes:
        click.echo(f"note: {note}")
    problems = check_campaign(camp, registry)
    if problems:
        raise ConfigError(
            problems_text(camp, problems),
            hint="fix the file (or the environment: keys, installed plugins), then run again",
        )
    if dry_run:
        _print_plan(camp)
        return
    try:
        with library_logs(Path(camp.out_dir) / "logs" / LOG_NAME, verbose):
            outcome = run_campaign(camp, resume=resume, registry=registry, say=click.echo)
    except KeyboardInterrupt:
        again = _resume_command(file, out, executor, executor_option, sets)
        click.echo(
            f"campaign {camp.name} stopped: each cell is stored as its run recorded it "
            f"(autorl campaign status {camp.out_dir}); to run what is left:\n  {again}",
            err=True,
        )
        raise SystemExit(130) from None
    click.echo(
        f"campaign {camp.name}: {outcome.completed} completed, {outcome.failed} failed, "
        f"{outcome.infra_error} infra_error, {outcome.skipped} skipped (finished before); "
        f"results: {camp.out_dir}"
    )
    if outcome.infra_error:
        click.echo(
            f"{outcome.infra_error} cell(s) ended infra_error (the harness failed, not the "
            f"agent): {_resume_command(file, out, executor, executor_option, sets)} runs them "
            "again"
        )
    click.echo(f"compare: autorl compare {camp.out_dir}")
    if outcome.failed or outcome.infra_error:
        raise SystemExit(1)


LOG_NAME = "campaign.log"


@contextmanager
def library_logs(log_file: Path, verbose: bool) -> Iterator[None]:
    """Libraries' log records (Ray's start-up INFO and WARNING lines, Python warnings) go to the
    campaign's log file, and to stderr only with ``--verbose``: the console shows the campaign's
    own lines."""
    import logging
    import sys

    log_file.parent.mkdir(parents=True, exist_ok=True)
    handlers: list[logging.Handler] = [logging.FileHandler(log_file, encoding="utf-8")]
    if verbose:
        handlers.append(logging.StreamHandler(sys.stderr))
    root = logging.getLogger()
    level = root.level
    for handler in handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)
        root.setLevel(level)
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()


def _resume_command(
    file: Path,
    out: Path | None,
    executor: str | None,
    executor_option: tuple[str, ...],
    sets: tuple[str, ...],
) -> str:
    """The command that resumes this campaign, with the flags it was started with."""
    import shlex

    argv = ["autorl", "campaign", "run", str(file), "--resume"]
    if out is not None:
        argv += ["--out", str(out)]
    if executor:
        argv += ["--executor", executor]
    for flag, values in (("--executor-option", executor_option), ("--set", sets)):
        for value in values:
            argv += [flag, value]
    return shlex.join(argv)


def _nothing(item: Any, placement: Any) -> None:
    """A job for checking an executor's options (never called: there are no items)."""


def _plan_state(camp: Any) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Each cell's status now and the store's rows, if the campaign directory has a store
    (read-only: a dry run writes nothing); empty for a new campaign."""
    from autorl_campaign.liveness import runner_alive
    from autorl_campaign.runner import observed_status
    from autorl_campaign.store import STORE_NAME, open_store

    out = Path(camp.out_dir)
    if not (out / STORE_NAME).is_file():
        return {}, []
    store = open_store(out, read_only=True)
    try:
        meta, rows = store.meta(), store.cells()
    finally:
        store.close()
    up = bool(runner_alive(meta))
    return {r["cell_id"]: observed_status(r, up, out / "logs") for r in rows}, rows


def _print_plan(camp: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    from autorl_campaign import estimate
    from autorl_campaign.runner import RESUMABLE

    out = Path(camp.out_dir)
    state, rows = _plan_state(camp)
    history = estimate.History()
    estimate.from_store(rows, out / "logs", history)
    estimate.from_results(estimate.results_files(out), history)
    todo = [c for c in camp.cells if state.get(c.cell_id, "pending") in RESUMABLE]
    title = f"campaign {camp.name}: {len(camp.cells)} cells"
    if not todo:
        title += ": all finished or running, --resume would run none"
    elif len(todo) < len(camp.cells):
        title += f", {len(todo)} left to run (what --resume runs)"
    table = Table(title=title, title_justify="left")
    for column in ("#", "cell", *camp.axes, "rep", "cpus", "gpus", "budget", "est.", "now"):
        table.add_column(column, overflow="fold")
    seconds: list[float] = []
    guessed = False
    for cell in camp.cells:
        budget = float(cell.config["budget"]["wall_seconds"])
        now = state.get(cell.cell_id, "pending")
        guess = estimate.cell_estimate(cell.config, history)
        runs = now in RESUMABLE
        if runs:
            seconds.append(guess.seconds)
            guessed |= not guess.measured
        table.add_row(
            str(cell.position + 1),
            cell.cell_id,
            *[_show(cell.axes.get(a)) for a in camp.axes],
            str(cell.replicate),
            f"{cell.slot.cpus:g}",
            str(cell.slot.gpus),
            _minutes(budget),
            (_minutes(guess.seconds) + ("" if guess.measured else "*")) if runs else "-",
            now if state else "new",
        )
    console = Console(soft_wrap=False)
    if not console.is_terminal:
        console.width = 200
    console.print(table)
    cpus = max((c.slot.cpus for c in camp.cells), default=1.0)
    lanes = estimate.lanes(camp.executor, camp.executor_options, cpus)
    serial = sum(seconds)
    parallel = (
        ""
        if lanes == 1
        else f", about {_minutes(estimate.makespan(seconds, lanes))} on {lanes} workers"
    )
    note = (
        f" (* no earlier run of that agent, task and model to measure from: its whole budget "
        f"and {estimate.DEFAULT_HARNESS_S:.0f} s of harness time assumed, likely more than it "
        "takes)"
        if guessed
        else " (measured from finished runs of the same agent, task and model)"
    )
    console.print(
        f"executor {camp.executor} {camp.executor_options or ''}; {len(seconds)} cell(s) to run: "
        f"estimated {_minutes(serial)} one after another{parallel}{note}; directory {camp.out_dir}"
    )
    console.print("every cell resolved and its options checked: nothing was run (--dry-run)")


def _show(value: Any) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else str(value)


def _minutes(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{math.ceil(seconds / 60)} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


@campaign.command("status")
@click.argument("campaign_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the cells as JSON.")
def status(campaign_dir: Path, as_json: bool) -> None:
    """Cells of a campaign and where each stands now: a cell is running only while its run's
    process lives (after a crash of the campaign process its cells show what their runs
    recorded, or interrupted)."""
    from rich.console import Console
    from rich.table import Table

    from autorl_campaign.liveness import runner_alive
    from autorl_campaign.runner import observed_status
    from autorl_campaign.store import STATUSES, open_store

    store = open_store(campaign_dir, must_exist=True, read_only=True)
    try:
        meta, cells = store.meta(), store.cells()
    finally:
        store.close()
    runner_up = bool(runner_alive(meta))
    logs = Path(campaign_dir) / "logs"
    counts = dict.fromkeys(STATUSES, 0)
    stale = 0
    for c in cells:
        now = observed_status(c, runner_up, logs)
        stale += now != c["status"]
        c["stored_status"], c["status"] = c["status"], now
        counts[now] = counts.get(now, 0) + 1
    if as_json:
        import json

        shown = {"campaign": meta.get("name"), "running": runner_up, "counts": counts}
        click.echo(json.dumps({**shown, "cells": cells}, indent=1, default=str))
        return
    axes = [a for a in _json_list(meta.get("axes"))]
    table = Table(title=f"campaign {meta.get('name', campaign_dir)}", title_justify="left")
    for column in ("cell", *axes, "rep", "status", "tries", "protocol", "score", "improvement"):
        table.add_column(column, overflow="fold")
    table.add_column("end", overflow="fold")
    for c in cells:
        table.add_row(
            c["cell_id"],
            *[_show(c["axes"].get(a)) for a in axes],
            str(c["replicate"]),
            c["status"],
            str(c["attempts"]),
            c.get("protocol") or "-",
            _score(c),
            "-" if c["improvement"] is None else f"{c['improvement']:+.2f}",
            _end(c),
        )
    console = Console(soft_wrap=False)
    if not console.is_terminal:
        console.width = 200
    console.print(table)
    console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n))
    if runner_up:
        console.print(f"the campaign is running (process {meta.get('runner_pid')})")
    elif stale or any(counts[s] for s in ("pending", "failed", "interrupted", "infra_error")):
        file = meta.get("file") or "FILE"
        console.print(
            "no campaign process is running"
            + (" (it stopped without recording its cells' ends: shown as their runs say)"
               if stale else "")
            + f"; to run what is left: autorl campaign run {file} --resume"
        )  # fmt: skip


def _end(cell: dict[str, Any]) -> str:
    from rich.markup import escape

    if cell.get("end_reason") == "infra_error" or cell.get("status") == "infra_error":
        cause = (cell.get("infra_cause") or "unknown cause")[:80]
        return escape(f"infra_error: {cause} (not an agent result; --resume retries it)")
    return escape(cell.get("end_reason") or (cell.get("error") or "-")[:60])


def _score(cell: dict[str, Any]) -> str:
    """The cell's score (a store from before sealed scoring has only the best)."""
    value = cell.get("score")
    if value is None and cell.get("protocol") is None:
        value = cell.get("best")
    return "-" if value is None else f"{value:.2f}"


def _json_list(text: str | None) -> list[str]:
    import json

    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []
