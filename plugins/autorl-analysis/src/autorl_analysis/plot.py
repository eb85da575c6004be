"""The timeline figure: scores over time above, what the agent did below, one time axis.

matplotlib (Agg) is imported here only, when a report is rendered.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from autorl_analysis.model import Analysis

ROWS = (
    ("code_revision", "code", "tab:blue", "s"),
    ("command", "commands", "tab:gray", ">"),
    ("training_finished", "training", "tab:purple", "D"),
    ("submission", "submissions", "black", "^"),
    ("budget_warning", "budget", "tab:orange", "x"),
    ("agent_end", "agent end", "tab:red", "|"),
)


def best_so_far(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    out, best = [], float("-inf")
    for t, score in sorted(points):
        best = max(best, score)
        out.append((t, best))
    return out


def timeline_png(
    analysis: Analysis, baseline: float | None, budget_s: float | None, run_id: str
) -> bytes:
    """The figure as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = analysis.timeline
    spend = [(e.t / 60, e.data.get("tokens", 0)) for e in events if e.kind == "driver_spend"]
    panels = 3 if spend else 2
    fig, axes = plt.subplots(
        panels,
        1,
        sharex=True,
        figsize=(9, 2.2 * panels + 1),
        gridspec_kw={"height_ratios": [3, 2, 1.5][:panels]},
    )
    top, rows = axes[0], axes[1]
    scores = [(e.t / 60, float(e.data["score"])) for e in events if e.kind == "score"]
    submitted = [
        (e.data.get("submitted_s", e.t) / 60, float(e.data["score"]))
        for e in events
        if e.kind == "score"
    ]
    high = max([s for _, s in scores] + [baseline or 0.0, 1.0])
    if baseline is not None:
        top.axhline(
            baseline, color="tab:gray", linestyle="--", linewidth=1.2, zorder=1, label="baseline"
        )
    if submitted:
        top.scatter(
            *zip(*submitted, strict=True), color="tab:green", zorder=4, label="submission score"
        )
        steps = best_so_far(submitted)
        end = (budget_s / 60) if budget_s else steps[-1][0]
        steps.append((max(end, steps[-1][0]), steps[-1][1]))
        top.step(
            *zip(*steps, strict=True),
            where="post",
            color="tab:green",
            linewidth=2.4,
            zorder=3,
            clip_on=False,
            label="best so far",
        )
    top.set_ylim(0, high * 1.12)
    top.set_ylabel("score")
    top.legend(loc="lower right", fontsize=8)
    top.set_title(f"run {run_id}: timeline")
    top.grid(alpha=0.3)
    for index, (kind, _label, colour, marker) in enumerate(ROWS):
        xs = [e.t / 60 for e in events if e.kind == kind]
        if xs:
            rows.scatter(
                xs, [index] * len(xs), color=colour, marker=marker, s=40, zorder=3, clip_on=False
            )
    rows.set_yticks(range(len(ROWS)), [label for _, label, _, _ in ROWS])
    rows.set_ylim(-0.7, len(ROWS) - 0.3)
    rows.grid(alpha=0.3, axis="x")
    for ax in axes:
        if budget_s:
            ax.axvline(budget_s / 60, color="tab:red", linestyle=":", linewidth=1)
        ax.set_xlim(left=0)
    if spend:
        axes[2].step(*zip(*spend, strict=True), where="post", color="tab:brown")
        axes[2].set_ylabel("driver tokens")
        axes[2].set_ylim(bottom=0)
        axes[2].grid(alpha=0.3)
    axes[-1].set_xlabel("minutes since the agent started")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()
