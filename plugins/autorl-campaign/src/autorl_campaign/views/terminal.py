"""``autorl compare``'s terminal output: rich tables of the statistics, notes first."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from autorl_campaign.analysis import Comparison
from autorl_campaign.views import display


def _table(title: str, rows: pd.DataFrame, caption: str = "") -> Table:
    table = Table(title=title, caption=caption or None, title_justify="left", show_lines=False)
    for column in rows.columns:
        text = {"group", "A", "B", "differs in", "note", "scaffold", "driver", "cell", "run"}
        numeric = column not in text | {"cause", "cell now"}
        table.add_column(str(column), justify="right" if numeric else "left", overflow="fold")
    for row in rows.itertuples(index=False):
        table.add_row(*(escape(str(v)) for v in row))
    return table


def print_comparison(
    comparison: Comparison, written: Sequence[Path], console: Console | None = None
) -> None:
    if console is None:
        console = Console(soft_wrap=False)
        if not console.is_terminal:  # piped or captured: do not squeeze tables to 80 columns
            console.width = 160
    name = comparison.meta.get("name") or "campaign"
    counts = ", ".join(f"{n} {s}" for s, n in comparison.counts.items() if n)
    console.print(f"[bold]{name}[/bold]: {counts or 'no cells'}")
    if comparison.legend():
        console.print(comparison.legend())
    if comparison.protocol:
        console.print(f"protocol: {comparison.protocol}")
    if comparison.precision:
        console.print(f"engine precision: {comparison.precision}")
    for note in comparison.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    infra = display.infra_rows(comparison)
    if not infra.empty:
        console.print(
            _table(
                "Infrastructure failures (infra_error: not agent results, left out)",
                infra,
                "`autorl campaign run FILE --resume` runs an infra_error cell again as a new "
                "attempt; the earlier run directory is kept",
            )
        )
    if not comparison.groups:
        return
    console.print(
        _table(
            "Groups (cells differing only in seed/replicate)",
            display.groups_rows(comparison),
            display.score_caption(comparison) + "; noise floor: " + display.NOISE_RULE,
        )
    )
    console.print(_table("Evaluation noise per task and model", display.noise_rows(comparison)))
    console.print(
        _table(
            "Expected best improvement of k runs (pass@k, unbiased over n runs)",
            display.pass_at_k_rows(comparison, display.PASS_AT_K_COLUMNS),
        )
    )
    for rows, empty, title, caption in (
        (
            display.paired_rows(comparison),
            "paired comparisons: no two groups share pairs (same task, model, seed)",
            "Paired comparisons (same task, model, seed, replicate)",
            "p: two-sided sign-flip permutation test; q: Benjamini-Hochberg over this table",
        ),
        (
            display.driver_rows(comparison),
            "driver effect: no scaffold was run with several drivers",
            "Driver effect within one scaffold",
            "vs best / vs worst: paired mean difference of improvements, permutation p",
        ),
    ):
        console.print(empty if rows.empty else _table(title, rows, caption))
    if written:
        console.print(f"wrote {len(written)} files to {written[0].parent}:")
        console.print("  " + " ".join(p.name for p in written))
