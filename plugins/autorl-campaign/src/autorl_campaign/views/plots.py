"""The comparison's figures as PNG bytes (matplotlib, Agg backend: no display needed).

One panel per (task, model): improvements on different tasks are in different units of
difficulty, so they share a figure but never an axis. Each group keeps its colour in every figure.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from autorl_campaign.analysis import SCALING_AXES, Comparison
from autorl_campaign.grouping import Group

PANEL_COLUMNS = 3


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def facet(group: Group) -> str:
    """The panel a group is drawn in: its task and model (or 'several' when pooled)."""
    task, model = group.common("task"), group.common("model")
    return f"{task or 'several tasks'} · {model or 'several models'}"


def _panels(comparison: Comparison) -> dict[str, list[Group]]:
    panels: dict[str, list[Group]] = {}
    for g in comparison.groups:
        panels.setdefault(facet(g), []).append(g)
    return panels


def _colour(comparison: Comparison, group: Group) -> Any:
    """Distinct within the group's panel; the same panel in every figure, so the same colour."""
    plt = _pyplot()
    neighbours = _panels(comparison)[facet(group)]
    palette = plt.get_cmap("tab10" if len(neighbours) <= 10 else "tab20")
    return palette(neighbours.index(group) % palette.N)


@contextmanager
def _figure(n_panels: int, title: str) -> Iterator[tuple[Any, list[Any]]]:
    plt = _pyplot()
    cols = min(n_panels, PANEL_COLUMNS)
    rows = math.ceil(n_panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), dpi=100, squeeze=False)
    flat = list(axes.flat)
    for extra in flat[n_panels:]:
        extra.set_visible(False)
    fig.suptitle(title, fontsize=12)
    try:
        yield fig, flat[:n_panels]
    finally:
        plt.close(fig)


def _png(fig: Any) -> bytes:
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _finish(ax: Any, title: str, xlabel: str, ylabel: str) -> None:
    ax.axhline(0.0, color="0.5", linewidth=0.8, linestyle="--")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.25)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best", framealpha=0.85)


def improvement_png(comparison: Comparison) -> bytes | None:
    """Mean improvement per group with its CI, and the task's noise floor as a tick."""
    table = comparison.tables["groups"]
    if table.empty:
        return None
    rows = {r.group: r for r in table.itertuples()}
    panels = _panels(comparison)
    with _figure(len(panels), "Mean improvement over the baseline (bars: CI)") as (fig, axes):
        for ax, (name, groups) in zip(axes, panels.items(), strict=True):
            for y, g in enumerate(groups):
                r = rows[g.label]
                colour = _colour(comparison, g)
                if not math.isnan(r.improvement_low):
                    ax.plot([r.improvement_low, r.improvement_high], [y, y], color=colour, lw=2)
                ax.plot([r.mean_improvement], [y], "o", color=colour)
                if not math.isnan(r.noise_floor):
                    ax.plot([r.noise_floor], [y], "|", color="black", markersize=14, mew=2)
            ax.set_yticks(range(len(groups)), [comparison.short(g) for g in groups], fontsize=7)
            ax.invert_yaxis()  # first group on top, as in the table
            ax.axvline(0.0, color="0.5", linewidth=0.8, linestyle="--")
            ax.set_title(f"{name}  (black tick: noise floor)", fontsize=10)
            ax.set_xlabel("improvement (score points)")
            ax.grid(True, axis="x", alpha=0.25)
        return _png(fig)


def scaling_png(comparison: Comparison, axis: str) -> bytes | None:
    """Best-so-far improvement against one resource axis, mean and CI band per group."""
    table = comparison.tables["scaling"]
    part = table[table["axis"] == axis] if not table.empty else table
    if part.empty:
        return None
    label = next(text for name, _, _, text in SCALING_AXES if name == axis)
    panels = _panels(comparison)
    with _figure(len(panels), f"Best-so-far improvement vs {label}") as (fig, axes):
        for ax, (name, groups) in zip(axes, panels.items(), strict=True):
            drawn = 0
            for g in groups:
                curve = part[part["group"] == g.label]
                if curve.empty:
                    continue
                drawn += 1
                colour = _colour(comparison, g)
                n = int(curve["n"].iloc[0])
                ax.step(
                    curve["x"],
                    curve["mean"],
                    where="post",
                    color=colour,
                    label=f"{comparison.short(g)} (n={n})",
                )
                if curve["low"].notna().any():
                    band = (curve["x"], curve["low"], curve["high"])
                    alpha = 0.2 if len(groups) <= 4 else 0.07  # many bands would hide the lines
                    ax.fill_between(*band, step="post", color=colour, alpha=alpha)
            if not drawn:
                ax.text(0.5, 0.5, f"no {axis} recorded", ha="center", transform=ax.transAxes)
            _finish(ax, name, label, "best-so-far improvement")
        return _png(fig)


def pass_at_k_png(comparison: Comparison) -> bytes | None:
    """Expected best improvement of k runs against k, per group."""
    table = comparison.tables["pass_at_k"]
    if table.empty:
        return None
    panels = _panels(comparison)
    with _figure(len(panels), "Expected best improvement of k runs (pass@k)") as (fig, axes):
        for ax, (name, groups) in zip(axes, panels.items(), strict=True):
            for g in groups:
                curve = table[table["group"] == g.label]
                ax.plot(
                    curve["k"],
                    curve["expected_best_improvement"],
                    "o-",
                    color=_colour(comparison, g),
                    label=comparison.short(g),
                )
            ax.xaxis.get_major_locator().set_params(integer=True)
            _finish(ax, name, "k (runs)", "expected best improvement")
        return _png(fig)


def figures(comparison: Comparison) -> dict[str, tuple[str, bytes]]:
    """Every figure there is data for: file stem -> (caption, PNG bytes)."""
    found: dict[str, tuple[str, bytes]] = {}
    image = improvement_png(comparison)
    if image:
        found["improvement"] = ("Mean improvement per group, CI and noise floor", image)
    for axis, _, _, label in SCALING_AXES:
        image = scaling_png(comparison, axis)
        if image:
            found[f"scaling_{axis}"] = (f"Best-so-far improvement vs {label}", image)
    image = pass_at_k_png(comparison)
    if image:
        found["pass_at_k"] = ("Expected best improvement of k runs", image)
    return found
