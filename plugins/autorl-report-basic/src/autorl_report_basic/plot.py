"""score_over_time.png: each submission's score against the agent's clock, with the baseline.

matplotlib is imported here, inside the function, with the Agg backend: rendering works on a
headless machine and importing the plugin stays cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autorl_records import RunRecord


def plot_score_over_time(record: RunRecord, data: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    subs = list(record.submissions)
    baseline = data.get("baseline_score")
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    try:
        _draw(ax, subs, baseline, data)
        fig.tight_layout()
        tmp = path.with_name(path.stem + ".tmp.png")
        fig.savefig(tmp, format="png")
        tmp.replace(path)
    finally:
        plt.close(fig)
    return path


def _draw(ax: Any, subs: list[Any], baseline: float | None, data: dict[str, Any]) -> None:
    minutes = [(s.elapsed_s or 0.0) / 60 for s in subs]
    budget_s = data.get("budget_seconds")
    valid = [(m, s) for m, s in zip(minutes, subs, strict=True) if s.valid]
    scored = [(m, s) for m, s in valid if s.status == "scored" and not s.copy_of_base]
    copies = [(m, s) for m, s in valid if s.copy_of_base]
    dups = [(m, s) for m, s in valid if s.status == "duplicate" and not s.copy_of_base]
    failed = [m for m, s in zip(minutes, subs, strict=True) if s.status == "failed"]
    pending = [m for m, s in zip(minutes, subs, strict=True) if not s.final]

    if baseline is not None:
        ax.axhline(baseline, color="0.35", linestyle="--", linewidth=1.2, label="baseline")
    if valid:
        best, xs, ys = float("-inf"), [], []
        for m, s in valid:
            best = max(best, s.score)
            xs.append(m)
            ys.append(best)
        end = max((budget_s or 0) / 60, xs[-1])
        ax.step(
            [*xs, end],
            [*ys, ys[-1]],
            where="post",
            color="tab:green",
            alpha=0.8,
            linewidth=2.2,
            zorder=3,  # above the baseline's dashes when they coincide (no gain)
            label="best so far",
        )
        ax.plot(
            [m for m, _ in valid],
            [s.score for _, s in valid],
            color="tab:blue",
            alpha=0.35,
            linewidth=1,
        )
    # (points, matplotlib format, style): submissions with a score at their score
    for points, fmt, style in (
        (scored, "o", {"color": "tab:blue", "markersize": 7, "label": "scored"}),
        (
            dups,
            "o",
            {
                "markerfacecolor": "none",
                "markeredgecolor": "tab:blue",
                "markersize": 8,
                "label": "duplicate (not re-evaluated)",
            },
        ),
        (copies, "s", {"color": "tab:orange", "markersize": 7, "label": "copy of the base model"}),
    ):
        if points:
            ax.plot([m for m, _ in points], [s.score for _, s in points], fmt, **style)
    for m, s in scored:
        ax.annotate(
            f"#{s.submission_id}",
            (m, s.score),
            textcoords="offset points",
            xytext=(0, 7),
            ha="center",
            fontsize=8,
            color="0.25",
        )
    # failed/pending submissions have no score: mark them on the time axis
    axis = ax.get_xaxis_transform()
    for times, fmt, style in (
        (
            failed,
            "x",
            {
                "color": "tab:red",
                "markersize": 9,
                "markeredgewidth": 2,
                "label": "failed (no score)",
            },
        ),
        (pending, "|", {"color": "0.4", "markersize": 12, "label": "pending"}),
    ):
        if times:
            ax.plot(times, [0.03] * len(times), fmt, transform=axis, clip_on=False, **style)
    if budget_s:
        ax.axvline(budget_s / 60, color="0.6", linestyle=":", linewidth=1, label="budget end")
        ax.set_xlim(left=0, right=budget_s / 60 * 1.03)
    else:
        ax.set_xlim(left=0)
    if not subs:
        ax.text(
            0.5,
            0.5,
            "no submissions",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=12,
            color="0.4",
        )
    _y_range(ax, [s.score for _, s in valid], baseline)

    metric = data.get("metric") or "score"
    who = " · ".join(
        str(x) for x in (data.get("agent"), data.get("driver"), data.get("model")) if x
    )
    ax.set_title(f"{data.get('task') or 'run'}: {metric} over time\n{who}", fontsize=11)
    ax.set_xlabel("minutes since the agent started")
    ax.set_ylabel(f"{metric} (%) on the held-out split")
    ax.grid(True, alpha=0.25)
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(loc="best", fontsize=8, framealpha=0.85)


def _y_range(ax: Any, scores: list[float], baseline: float | None) -> None:
    """From 0, so a gain is seen at its true size (a zoomed axis makes noise look like a
    climb); the top leaves room over the highest score, at least up to 10."""
    values = [*scores, *([baseline] if baseline is not None else [])]
    if not values:
        ax.set_ylim(0.0, 100.0)
        return
    high = max(values)
    ax.set_ylim(0.0, 101.0 if high >= 100 else min(100.0, max(10.0, high * 1.15 + 1.0)))
