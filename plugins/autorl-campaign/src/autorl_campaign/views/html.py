"""``compare/index.html``: one self-contained page (inline CSS, PNGs as data URIs, no script).

It opens from a file, a mail attachment or an archive with no network and no JavaScript; the
only links are to the CSV/Parquet files written beside it.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from autorl_campaign.analysis import Comparison
from autorl_campaign.views import display

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1300px; color: #222;
       padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2.2rem; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.6rem 0; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
p.note { background: #fff7e0; border-left: 4px solid #e0a800; padding: 0.3rem 0.6rem; }
p.caption, figcaption { color: #555; font-size: 0.85rem; }
figure { margin: 1rem 0; } img { max-width: 100%; height: auto; border: 1px solid #eee; }
.scroll { overflow-x: auto; }
"""


def _table(rows: pd.DataFrame, table_id: str) -> str:
    """A pandas table as escaped HTML with an id the browser test finds it by."""
    body = rows.to_html(
        index=False, escape=True, border=0, na_rep=display.MISSING, float_format=display.num
    )
    return f'<div class="scroll" id="{table_id}">{body}</div>'


def _figure(stem: str, caption: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    alt = html.escape(caption)
    return (
        f'<figure id="fig-{stem}"><img src="data:image/png;base64,{data}" alt="{alt}">'
        f"<figcaption>{alt}</figcaption></figure>"
    )


def render_page(
    comparison: Comparison,
    figures: dict[str, tuple[str, bytes]],
    files: Sequence[Path],
) -> str:
    """The page's HTML text."""
    e = html.escape
    name = comparison.meta.get("name") or "campaign"
    counts = ", ".join(f"{n} {s}" for s, n in comparison.counts.items() if n) or "no cells"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<link rel="icon" href="data:,">',
        f"<title>autorl compare: {e(name)}</title><style>{STYLE}</style></head><body>",
        f"<h1>autorl compare: {e(name)}</h1>",
        f"<p>cells: {e(counts)}</p>",
    ]
    if comparison.legend():
        parts.append(f"<p>{e(comparison.legend())}</p>")
    if comparison.protocol:
        parts.append(f"<p>protocol: {e(comparison.protocol)}</p>")
    if comparison.precision:
        parts.append(f"<p>engine precision: {e(comparison.precision)}</p>")
    parts += [f'<p class="note">note: {e(n)}</p>' for n in comparison.notes]
    infra = display.infra_rows(comparison)
    if not infra.empty:
        parts += [
            "<h2>Infrastructure failures</h2>",
            '<p class="caption">Attempts the harness ended (infra_error: grader, sandbox, '
            "engine or driver upstream): not agent results, left out of every statistic. "
            "<code>autorl campaign run FILE --resume</code> runs such a cell again as a new "
            "attempt; the earlier run directory is kept.</p>",
            _table(infra, "infra-errors"),
        ]
    if comparison.groups:
        parts += [
            "<h2>Groups</h2>",
            '<p class="caption">A group is the cells that differ only in seed and replicate. '
            f"{e(display.score_caption(comparison))}. "
            f"Noise rule: {e(display.NOISE_RULE)}.</p>",
            _table(display.groups_rows(comparison), "groups"),
        ]
        if "improvement" in figures:
            parts.append(_figure("improvement", *figures["improvement"]))
        parts += [
            "<h2>Evaluation noise per task and model</h2>",
            _table(display.noise_rows(comparison), "noise"),
            "<h2>Expected best improvement of k runs (pass@k)</h2>",
            '<p class="caption">E[max of k runs], unbiased over the n runs of each group '
            "(Chen et al. 2021).</p>",
            _table(display.pass_at_k_rows(comparison), "pass-at-k"),
        ]
        if "pass_at_k" in figures:
            parts.append(_figure("pass_at_k", *figures["pass_at_k"]))
        paired = display.paired_rows(comparison)
        parts.append("<h2>Paired comparisons</h2>")
        if paired.empty:
            parts.append("<p>No two groups share pairs (same task, model, seed, replicate).</p>")
        else:
            parts += [
                '<p class="caption">Pairs: same task, model, seed and replicate. '
                "p: two-sided sign-flip permutation test; d_z: mean / SD of the paired "
                "differences; q: Benjamini-Hochberg over this table.</p>",
                _table(paired, "paired"),
            ]
        drivers = display.driver_rows(comparison)
        parts.append("<h2>Driver effect within one scaffold</h2>")
        if drivers.empty:
            parts.append("<p>No scaffold was run with several drivers.</p>")
        else:
            parts.append(_table(drivers, "driver-effect"))
        scaling = [s for s in figures if s.startswith("scaling_")]
        if scaling:
            parts += [
                "<h2>Scaling curves</h2>",
                '<p class="caption">Best-so-far improvement of the scores the agent saw (dev '
                "under sealed; 0 before the first valid submission), mean over each group's "
                "cells on a common grid, band: CI.</p>",
            ]
            parts += [_figure(stem, *figures[stem]) for stem in scaling]
    parts.append("<h2>Cells</h2>")
    cells = comparison.cells
    shown = [c for c in ("cell_id", "group", "status", "seed", "replicate") if c in cells]
    shown += [
        c
        for c in (
            "protocol",
            "precision",
            "baseline",
            "score",
            "score_se",
            "best",
            "improvement",
            "selection_gap",
            "noise_floor",
            "clears_noise",
            "end_reason",
            "error",
        )
        if c in cells
    ]
    parts.append(_table(cells[shown] if shown else cells, "cells"))
    if files:
        links = " ".join(f'<a href="{e(p.name)}">{e(p.name)}</a>' for p in files)
        parts.append(f"<h2>Files</h2><p>{links}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
