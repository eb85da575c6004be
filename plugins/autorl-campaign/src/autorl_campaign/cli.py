"""``autorl campaign run FILE`` (``--dry-run``, ``--resume``) and ``autorl campaign status DIR``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from autorl.errors import ConfigError

OVERHEAD_GUESS_S = 120.0
"""Harness time per cell besides the agent's budget (baseline, grading, report) when the store
has no finished cell of that task and model to measure it from."""


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
def run(
    file: Path,
    dry_run: bool,
    resume: bool,
    out: Path | None,
    executor: str | None,
    executor_option: tuple[str, ...],
    sets: tuple[str, ...],
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
    outcome = run_campaign(camp, resume=resume, registry=registry, say=click.echo)
    click.echo(
        f"campaign {camp.name}: {outcome.completed} completed, {outcome.failed} failed, "
        f"{outcome.infra_error} infra_error, {outcome.skipped} skipped (finished before); "
        f"results: {camp.out_dir}"
    )
    if outcome.infra_error:
        click.echo(
            f"{outcome.infra_error} cell(s) ended infra_error (the harness failed, not the "
            f"agent): autorl campaign run {file} --resume runs them again"
        )
    click.echo(f"compare: autorl compare {camp.out_dir}")
    if outcome.failed or outcome.infra_error:
        raise SystemExit(1)


def _overheads(out_dir: Path) -> dict[tuple[str, str], float]:
    """Measured harness time per (task, model) from finished cells of this campaign, if any."""
    from datetime import datetime

    from autorl_campaign.store import STORE_NAME, CampaignStore

    if not (out_dir / STORE_NAME).is_file():
        return {}
    store = CampaignStore(out_dir)
    try:
        rows = store.cells("completed")
    finally:
        store.close()
    seen: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        try:
            took = (
                datetime.fromisoformat(row["ended"].replace("Z", "+00:00"))
                - datetime.fromisoformat(row["started"].replace("Z", "+00:00"))
            ).total_seconds()
        except (AttributeError, TypeError, ValueError):
            continue
        seen.setdefault((row["task"], row["model"]), []).append(
            max(0.0, took - (row["agent_seconds"] or 0.0))
        )
    return {k: sum(v) / len(v) for k, v in seen.items()}


def _nothing(item: Any, placement: Any) -> None:
    """A job for checking an executor's options (never called: there are no items)."""


def _print_plan(camp: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    measured = _overheads(Path(camp.out_dir))
    table = Table(title=f"campaign {camp.name}: {len(camp.cells)} cells", title_justify="left")
    for column in ("#", "cell", *camp.axes, "rep", "cpus", "gpus", "budget", "est."):
        table.add_column(column, overflow="fold")
    total = 0.0
    guessed = False
    for cell in camp.cells:
        budget = float(cell.config["budget"]["wall_seconds"])
        key = (cell.config["task"], cell.config["model"])
        overhead = measured.get(key)
        guessed |= overhead is None
        estimate = budget + (OVERHEAD_GUESS_S if overhead is None else overhead)
        total += estimate
        table.add_row(
            str(cell.position + 1),
            cell.cell_id,
            *[_show(cell.axes.get(a)) for a in camp.axes],
            str(cell.replicate),
            f"{cell.slot.cpus:g}",
            str(cell.slot.gpus),
            _minutes(budget),
            _minutes(estimate),
        )
    console = Console(soft_wrap=False)
    if not console.is_terminal:
        console.width = 200
    console.print(table)
    workers = camp.executor_options.get("workers") if camp.executor == "pool" else None
    lanes = workers if isinstance(workers, int) and workers > 0 else 1
    parallel = "" if lanes == 1 else f", about {_minutes(total / lanes)} on {lanes} workers"
    note = (
        f" (harness time per cell guessed at {OVERHEAD_GUESS_S:.0f} s where no cell of that "
        "task and model has finished yet)"
        if guessed
        else " (harness time per cell measured from finished cells)"
    )
    console.print(
        f"executor {camp.executor} {camp.executor_options or ''}; estimated "
        f"{_minutes(total)} one after another{parallel}{note}; directory {camp.out_dir}"
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
def status(campaign_dir: Path) -> None:
    """Cells of a campaign and where each stands."""
    from rich.console import Console
    from rich.table import Table

    from autorl_campaign.store import open_store

    store = open_store(campaign_dir, must_exist=True, read_only=True)
    try:
        meta, cells, counts = store.meta(), store.cells(), store.counts()
    finally:
        store.close()
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
