"""``autorl compare CAMPAIGN_DIR``: a campaign's statistics in the terminal, as an HTML page and
as CSV/Parquet tables.

numpy, scipy, pandas and matplotlib are imported when the command runs, not when it is listed,
so ``autorl --help`` and ``autorl compare --help`` stay fast.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from autorl.errors import AutorlError

F = TypeVar("F", bound=Callable[..., Any])


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    """``--group-by agent --group-by driver`` and ``--group-by agent,driver`` alike."""
    return tuple(p.strip() for v in values for p in v.split(",") if p.strip())


def _statistic(flag: str, kind: Any, default: float, text: str) -> Callable[[F], F]:
    """A number the statistics are computed with, its default shown in ``--help``."""
    return click.option(flag, type=kind, default=default, show_default=True, help=text)


@click.command()
@click.argument("campaign_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--group-by",
    "group_by",
    multiple=True,
    metavar="AXIS",
    help="Factors that define a group (repeatable or comma-separated). Default: every axis "
    "except seed, so a group is one cell config and its seeds/replicates.",
)
@click.option(
    "--baseline-group",
    metavar="NAME=VALUE[,...]",
    default=None,
    help="Compare every group with the group(s) matching these factor values (paired, on the "
    "same task/model/seed). Default: every two groups that differ in exactly one factor.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where to write index.html, the figures and the CSV/Parquet tables. "
    "Default: CAMPAIGN_DIR/compare.",
)
@click.option(
    "--comparable-only",
    is_flag=True,
    help="Leave out cells that were not comparable (unsandboxed, or an integrity check failed).",
)
@click.option(
    "--protocol",
    type=click.Choice(["sealed", "reference"]),
    default=None,
    help="Compare only the cells scored under this protocol. Without it, a campaign whose "
    "completed cells mix protocols is refused (a sealed test score and the best of several "
    "held-out scores are not comparable).",
)
@click.option(
    "--precision",
    default=None,
    metavar="PRECISION",
    help="Compare only the cells graded in this engine precision (fp32, bf16). Without it, a "
    "campaign whose completed cells mix precisions is refused (the same checkpoint scores "
    "differently in bf16 and fp32; docs/engine.md).",
)
@_statistic(
    "--confidence", click.FloatRange(0.5, 0.999), 0.95, "Confidence level of the bootstrap CIs."
)
@_statistic(
    "--resamples",
    click.IntRange(min=99),
    9999,
    "Bootstrap resamples and permutation-test permutations (exact up to 2^n <= this).",
)
@_statistic(
    "--seed", int, 0, "Seed of the resampling: the same store and seed give the same numbers."
)
@_statistic(
    "--grid-points",
    click.IntRange(min=2),
    50,
    "Points of the common grid the scaling curves are evaluated on.",
)
def compare(
    campaign_dir: Path,
    group_by: tuple[str, ...],
    out_dir: Path | None,
    resamples: int,
    **settings: Any,
) -> None:
    """Statistics of a campaign: CIs, pass@k, noise floors, paired tests, scaling curves.

    Ranks and tests each run's score (sealed: the test score of its selected checkpoint);
    cells that ended infra_error are left out and named.

    Prints the tables, and writes CAMPAIGN_DIR/compare/index.html (self-contained: figures
    embedded, no network or script needed) with CSV and Parquet copies of every table.
    """
    import sqlite3

    from autorl_campaign.analysis import Options, compare_campaign
    from autorl_campaign.store import STORE_NAME, open_store
    from autorl_campaign.views import export, plots, terminal
    from autorl_campaign.views.html import render_page

    # the other options are Options' fields by the same names
    options = Options(group_by=_split(group_by), n_resamples=resamples, **settings)
    try:
        store = open_store(campaign_dir, must_exist=True, read_only=True)
        try:
            comparison = compare_campaign(store, options)
        finally:
            store.close()
    except sqlite3.DatabaseError as exc:
        raise AutorlError(
            f"{campaign_dir / STORE_NAME} cannot be read as a campaign store: {exc}",
            hint="pass a directory written by `autorl campaign run`; if the file was copied "
            "while a campaign ran, copy it again with its -wal file",
        ) from None

    out_dir = out_dir or campaign_dir / "compare"
    try:
        written = export.write_tables(comparison, out_dir)
        images = plots.figures(comparison)
        for stem, (_, png) in images.items():
            path = out_dir / f"{stem}.png"
            path.write_bytes(png)
            written.append(path)
        page = out_dir / "index.html"
        page.write_text(render_page(comparison, images, written), encoding="utf-8")
    except OSError as exc:
        raise AutorlError(
            f"cannot write the comparison to {out_dir}: {exc.strerror or exc}",
            hint="choose a writable directory with --out",
        ) from None
    terminal.print_comparison(comparison, [page, *written])
