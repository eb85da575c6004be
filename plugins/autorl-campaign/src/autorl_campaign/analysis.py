"""A campaign's statistics tables, computed from its store (what ``autorl compare`` shows).

Reads the store only (numbers the harness recorded, never the agents' files), groups the
completed cells (:mod:`autorl_campaign.grouping`) and applies the estimators of
:mod:`autorl_campaign.stats`. Every table is a pandas DataFrame with plain columns, so the
terminal, the HTML page and the CSV/Parquet exports show the same numbers.

Conventions (docs/campaign-statistics.md): the statistics rank and test on each run's score
(sealed protocol: the test score of its one selected checkpoint; reference: its best
submission), never on the dev scores the agent climbed. A completed cell without a score has
improvement 0 and score = baseline (the base model is what it delivered); a cell without a
baseline score has no improvement at all and is left out, with a note. Cells of different
protocols are never ranked together (an error, or ``--protocol`` to keep one), nor are cells
graded in different engine precisions (an error, or ``--precision`` to keep one: bf16 and fp32
greedy outputs differ, so their scores differ for reasons no agent caused), and cells that
ended ``infra_error`` (the harness failed, not the agent) are left out and named.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from autorl.errors import AutorlError
from autorl_campaign import stats
from autorl_campaign.grouping import (
    Group,
    constant_factors,
    factors,
    group_cells,
    pairs,
    redundant_factors,
    select_groups,
    varying_factors,
)
from autorl_campaign.store import CampaignStore

# Scaling-curve axes: (name, submission column, cell column that extends the axis to the run's
# end, label). "submissions" counts submissions (valid or not) in submission order.
SCALING_AXES: tuple[tuple[str, str, str | None, str], ...] = (
    ("time", "elapsed_s", "agent_seconds", "agent wall time (s)"),
    ("tokens", "tokens_by_then", "driver_tokens", "driver tokens"),
    ("cost", "cost_by_then", "driver_cost_usd", "driver cost (USD)"),
    ("submissions", "ordinal", None, "submissions made"),
)

INFRA_COLUMNS = ["cell_id", "attempt", "run_id", "run_dir", "infra_cause", "cell_status_now"]

# Columns of the tables when they have no rows (the factor columns of `groups` vary).
GROUP_COLUMNS = ["group", "label", "n", "n_no_valid", "n_incomparable", "n_flagged"]
GROUP_COLUMNS += ["mean_score", "score_low"]
GROUP_COLUMNS += ["score_high", "mean_improvement", "improvement_low", "improvement_high"]
GROUP_COLUMNS += ["mean_selection_gap"]
GROUP_COLUMNS += ["noise_floor", "clears_noise", "ci_above_zero", "note"]
_PAIRED = ["n_pairs", "mean_diff", "diff_low", "diff_high", "sd_diff", "d_z", "p_value", "note"]
DRIVER_COLUMNS = ["scaffold", "scaffold_label", "driver", "group", "n", "mean_improvement"]
DRIVER_COLUMNS += ["spread_range", "spread_sd", "is_best", "is_worst"]
DRIVER_COLUMNS += [f"{side}_{name}" for side in ("vs_best", "vs_worst") for name in _PAIRED]


@dataclass(frozen=True)
class Options:
    """How to group and how to resample (the ``autorl compare`` options)."""

    group_by: tuple[str, ...] = ()
    baseline_group: str | None = None
    comparable_only: bool = False
    protocol: str | None = None
    """Keep only the cells of this scoring protocol (``sealed`` or ``reference``)."""
    precision: str | None = None
    """Keep only the cells graded in this engine precision (``fp32``, ``bf16``)."""
    confidence: float = stats.CONFIDENCE
    n_resamples: int = stats.RESAMPLES
    seed: int = stats.SEED
    grid_points: int = 50


@dataclass
class Comparison:
    """Everything ``autorl compare`` prints, draws and exports."""

    meta: dict[str, str]
    counts: dict[str, int]
    notes: list[str]
    groups: list[Group]
    grouping: list[str]
    constant: dict[str, str]
    protocol: str | None = None
    precision: str | None = None
    options: Options = field(default_factory=Options)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    cells: pd.DataFrame = field(default_factory=pd.DataFrame)
    submissions: pd.DataFrame = field(default_factory=pd.DataFrame)

    def hidden_factors(self) -> tuple[set[str], dict[str, str]]:
        """Factors left out of labels: constant ones, and those another factor determines."""
        return self._hidden()

    def _hidden(self) -> tuple[set[str], dict[str, str]]:
        follows = redundant_factors(self.groups, self.constant)
        return set(self.constant) | set(follows), follows

    def short(self, group: Group) -> str:
        return group.short_label(self._hidden()[0])

    def legend(self) -> str:
        """What a short group label lists, which factors follow another, what all share."""
        if len(self.groups) < 2:
            return ""
        hidden, follows = self._hidden()
        text = "group = " + " · ".join(varying_factors(self.groups, hidden))
        by_leader: dict[str, list[str]] = {}
        for name, leader in follows.items():
            by_leader.setdefault(leader, []).append(name)
        for leader, names in by_leader.items():
            text += f"; {', '.join(names)} follow{'s' if len(names) == 1 else ''} {leader}"
        if self.constant:
            text += "; every group has " + ", ".join(f"{k}={v}" for k, v in self.constant.items())
        return text


def protocol_of(cell: dict[str, Any]) -> str:
    """The cell's scoring protocol; a store from before sealed scoring recorded reference runs."""
    return str(cell.get("protocol") or "reference")


UNRECORDED_PRECISION = "fp32"
"""A run that recorded no engine was graded before the engine existed: transformers, fp32."""


def precision_of(cell: dict[str, Any]) -> str:
    """The precision the cell's run was graded in (``fp32`` when it recorded none)."""
    return str(cell.get("precision") or UNRECORDED_PRECISION)


def score_recorded(cell: dict[str, Any]) -> float | None:
    """The run's score as stored: the sealed test score, or the best under reference (a store
    from before the score column holds only ``best``); None when the run had no score."""
    value = cell.get("score")
    if value is None and cell.get("protocol") is None:
        value = cell.get("best")
    return None if value is None else float(value)


def improvement_of(cell: dict[str, Any]) -> float | None:
    """The improvement the statistics use: the store's (score - baseline on the score's split),
    or 0 when the run had no score (the base model stands)."""
    if cell.get("baseline") is None:
        return None
    value = cell.get("improvement")
    return float(value) if value is not None else 0.0


def score_of(cell: dict[str, Any]) -> float | None:
    """The score the statistics use: the run's, or the baseline when it had none."""
    value = score_recorded(cell)
    return value if value is not None else cell.get("baseline")


def _ci_kwargs(options: Options) -> dict[str, Any]:
    return {
        "confidence": options.confidence,
        "n_resamples": options.n_resamples,
        "seed": options.seed,
    }


def compare_campaign(store: CampaignStore, options: Options | None = None) -> Comparison:
    """The statistics tables of a campaign store."""
    options = options or Options()
    all_cells = store.cells()
    all_subs = store.submissions()
    counts = dict(store.counts())
    notes: list[str] = []

    completed = [c for c in all_cells if c["status"] == "completed"]
    left = {s: n for s, n in counts.items() if s != "completed" and n}
    if left:
        detail = ", ".join(f"{n} {s}" for s, n in left.items())
        notes.append(
            f"{sum(left.values())} of {len(all_cells)} cells are not completed and are left "
            f"out ({detail})"
        )
    infra = [c for c in all_cells if c["status"] == "infra_error"]
    if infra:
        notes.append(
            f"{len(infra)} cell(s) ended infra_error: the harness (grader, sandbox, engine or "
            "driver upstream) failed, so they are not agent results and are left out of every "
            "statistic: "
            + "; ".join(f"{c['cell_id']} ({c.get('infra_cause') or 'unknown'})" for c in infra)
            + ". `autorl campaign run FILE --resume` runs them again"
        )
    completed, protocol = _one_protocol(completed, options, notes)
    completed, precision = _one_precision(completed, options, notes)
    no_baseline = [c for c in completed if c.get("baseline") is None]
    if no_baseline:
        notes.append(
            f"{len(no_baseline)} completed cell(s) have no baseline score (its evaluation "
            "failed) and are left out: " + ", ".join(c["cell_id"] for c in no_baseline)
        )
    usable = [c for c in completed if c.get("baseline") is not None]
    flagged = [c for c in usable if c.get("flagged") is True]
    if flagged:
        notes.append(
            f"{len(flagged)} cell(s) flagged by the integrity analysis (copy of the base, eval "
            "leakage, a judge's violation...: see each run's report): "
            + ", ".join(c["cell_id"] for c in flagged)
            + ("; left out (--comparable-only)" if options.comparable_only else "")
        )
    incomparable = [c for c in usable if c.get("comparable") is False]
    if options.comparable_only:
        usable = [c for c in usable if c.get("flagged") is not True]
    if incomparable and options.comparable_only:
        usable = [c for c in usable if c.get("comparable") is not False]
        notes.append(
            f"{len(incomparable)} cell(s) are not comparable (unsandboxed, or an integrity "
            "check failed) and are left out (--comparable-only)"
        )
    elif incomparable:
        notes.append(
            f"{len(incomparable)} cell(s) are not comparable (unsandboxed, or an integrity "
            "check failed); --comparable-only leaves them out"
        )
    no_valid = [c for c in usable if score_recorded(c) is None]
    if no_valid:
        notes.append(
            f"{len(no_valid)} cell(s) have no score (no valid submission, or none selected): "
            "counted as improvement 0 (the base model stands)"
        )

    groups = group_cells(usable, options.group_by or None)
    grouping = [k for k, _ in groups[0].key] if groups else list(options.group_by)
    comparison = Comparison(
        meta=store.meta(),
        counts=counts,
        notes=notes,
        groups=groups,
        grouping=grouping,
        constant=constant_factors(groups),
        options=options,
        protocol=protocol,
        precision=precision,
    )
    subs_by_cell: dict[str, list[dict[str, Any]]] = {}
    for s in all_subs:
        subs_by_cell.setdefault(s["cell_id"], []).append(s)

    noise = noise_table(usable)
    floors = {(r.task, r.model): r.floor for r in noise.itertuples()}
    comparison.tables = {
        "groups": groups_table(comparison, floors, options),
        "noise": noise,
        "pass_at_k": pass_at_k_table(comparison),
        "paired": paired_table(comparison, options),
        "driver_effect": driver_effect_table(comparison, options),
        "scaling": scaling_table(comparison, subs_by_cell, options),
        "infra_errors": infra_table(all_cells, store.attempts()),
    }
    if not groups:
        notes.append("no completed cell with a baseline score: nothing to compare yet")
    comparison.cells = cells_frame(all_cells, groups, floors)
    comparison.submissions = submissions_frame(all_subs, all_cells, groups)
    return comparison


def _one_protocol(
    cells: list[dict[str, Any]], options: Options, notes: list[str]
) -> tuple[list[dict[str, Any]], str | None]:
    """The cells of one scoring protocol: a sealed test score and the best of several
    held-out scores measure different things, so ranking them together is refused."""
    return _one_of(
        cells, protocol_of, options.protocol, "protocol", notes,
        "were scored under different protocols: {found}; a sealed test score and the best of "
        "several held-out scores are not comparable, so they are not ranked together",
        "compare one protocol at a time: autorl compare DIR --protocol sealed (or --protocol "
        "reference)",
    )  # fmt: skip


def _one_precision(
    cells: list[dict[str, Any]], options: Options, notes: list[str]
) -> tuple[list[dict[str, Any]], str | None]:
    """The cells graded in one engine precision: bf16 and fp32 give different greedy outputs,
    so the same checkpoint scores differently in each, and ranking them together is refused
    (as protocols are; grouping them apart would still pair them in the paired tests)."""
    return _one_of(
        cells, precision_of, options.precision, "precision", notes,
        "were graded in different engine precisions: {found}; bf16 and fp32 give different "
        "outputs for the same checkpoint, so their scores are not ranked together",
        "compare one precision at a time: autorl compare DIR --precision {first} (a run "
        "records its precision in metrics.engine; docs/engine.md)",
    )  # fmt: skip


def _one_of(
    cells: list[dict[str, Any]],
    value_of: Callable[[dict[str, Any]], str],
    chosen: str | None,
    what: str,
    notes: list[str],
    problem: str,
    hint: str,
) -> tuple[list[dict[str, Any]], str | None]:
    """The cells whose ``value_of`` is ``chosen`` (``--<what>``; the others named in a note),
    or all cells when they share one value; several values without a choice are refused with
    ``problem`` and ``hint`` (``{found}``: each value with its cells; ``{first}``: one value)."""
    by_value: dict[str, list[str]] = {}
    for c in cells:
        by_value.setdefault(value_of(c), []).append(c["cell_id"])
    if chosen is not None:
        kept = [c for c in cells if value_of(c) == chosen]
        dropped = {v: ids for v, ids in by_value.items() if v != chosen}
        if dropped:
            notes.append(
                f"only {what} {chosen!r} is compared (--{what}); left out: "
                + "; ".join(f"{len(ids)} {v} cell(s): {_ids(ids)}" for v, ids in dropped.items())
            )
        return kept, chosen
    if len(by_value) > 1:
        found = " and ".join(
            f"{v!r} ({len(ids)} cell(s): {_ids(ids)})" for v, ids in sorted(by_value.items())
        )
        raise AutorlError(
            "this campaign's completed cells " + problem.format(found=found),
            hint=hint.format(first=sorted(by_value)[0]),
        )
    return cells, next(iter(by_value), None)


def _ids(ids: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", ... ({len(ids) - limit} more)" if len(ids) > limit else "")


def infra_table(
    cells: Sequence[dict[str, Any]], attempts: Sequence[dict[str, Any]]
) -> pd.DataFrame:
    """Every attempt the harness ended (``infra_error``), with the cell's status now: a cell
    retried by ``--resume`` shows its earlier attempt here and its new result in the tables."""
    now = {c["cell_id"]: c["status"] for c in cells}
    rows = [
        {
            "cell_id": a["cell_id"],
            "attempt": a["attempt"],
            "run_id": a.get("run_id"),
            "run_dir": a.get("run_dir"),
            "infra_cause": a.get("infra_cause") or "unknown cause",
            "cell_status_now": now.get(a["cell_id"], "?"),
        }
        for a in attempts
        if a.get("status") == "infra_error" or a.get("end_reason") == "infra_error"
    ]
    seen = {(r["cell_id"], r["attempt"]) for r in rows}
    for c in cells:  # a store without the attempts table (older autorl-campaign)
        if c["status"] == "infra_error" and (c["cell_id"], c.get("attempts")) not in seen:
            rows.append(
                {
                    "cell_id": c["cell_id"],
                    "attempt": c.get("attempts"),
                    "run_id": c.get("run_id"),
                    "run_dir": c.get("run_dir"),
                    "infra_cause": c.get("infra_cause") or "unknown cause",
                    "cell_status_now": c["status"],
                }
            )
    return pd.DataFrame(rows, columns=INFRA_COLUMNS)


def _nan(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def _floor_of(group: Group, floors: dict[tuple[str, str], float | None]) -> float | None:
    """The largest noise floor among the group's (task, model)s (conservative when pooled)."""
    known = [
        f
        for f in {floors.get((factors(c)["task"], factors(c)["model"])) for c in group.cells}
        if f is not None and np.isfinite(f)
    ]
    return max(known) if known else None


def noise_table(cells: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per (task, model): evaluator SE, spread of distinct baselines, the floor."""
    by_pair: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in cells:
        f = factors(c)
        by_pair.setdefault((f["task"], f["model"]), []).append(c)
    rows = []
    for (task, model), members in by_pair.items():
        nf = stats.noise_floor(
            [c.get("baseline_se") for c in members], [c.get("baseline") for c in members]
        )
        rows.append(
            {
                "task": task,
                "model": model,
                "n_cells": len(members),
                "eval_se": _nan(nf.eval_se),
                "n_baselines": nf.n_baselines,
                "baseline_sd": _nan(nf.baseline_sd),
                "sigma": _nan(nf.sigma),
                "floor": _nan(nf.floor),
            }
        )
    columns = ["task", "model", "n_cells", "eval_se", "n_baselines", "baseline_sd", "sigma"]
    return pd.DataFrame(rows, columns=[*columns, "floor"])


def groups_table(
    comparison: Comparison, floors: dict[tuple[str, str], float | None], options: Options
) -> pd.DataFrame:
    """One row per group: n, mean best and improvement with CIs, noise floor, clears it?"""
    rows = []
    for g in comparison.groups:
        score = stats.mean_ci([score_of(c) for c in g.cells], **_ci_kwargs(options))
        imp = stats.mean_ci([improvement_of(c) for c in g.cells], **_ci_kwargs(options))
        gaps = [c["selection_gap"] for c in g.cells if c.get("selection_gap") is not None]
        floor = _floor_of(g, floors)
        clears = None if floor is None or imp.mean is None else bool(imp.mean > floor)
        rows.append(
            {
                "group": g.label,
                "label": comparison.short(g),
                **g.factors,
                "n": imp.n,
                "n_no_valid": sum(1 for c in g.cells if score_recorded(c) is None),
                "n_incomparable": sum(1 for c in g.cells if c.get("comparable") is False),
                "n_flagged": sum(1 for c in g.cells if c.get("flagged") is True),
                "mean_score": _nan(score.mean),
                "score_low": _nan(score.low),
                "score_high": _nan(score.high),
                "mean_improvement": _nan(imp.mean),
                "improvement_low": _nan(imp.low),
                "improvement_high": _nan(imp.high),
                "mean_selection_gap": float(np.mean(gaps)) if gaps else float("nan"),
                "noise_floor": _nan(floor),
                "clears_noise": clears,
                "ci_above_zero": None if imp.low is None else bool(imp.low > 0),
                "note": imp.note,
            }
        )
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=GROUP_COLUMNS)


def pass_at_k_table(comparison: Comparison) -> pd.DataFrame:
    """Expected best improvement of k runs, k = 1..n, per group."""
    rows = []
    for g in comparison.groups:
        values = [improvement_of(c) for c in g.cells]
        for k, value in enumerate(stats.expected_best_of_k(values), start=1):
            rows.append(
                {
                    "group": g.label,
                    "label": comparison.short(g),
                    "n": len(values),
                    "k": k,
                    "expected_best_improvement": value,
                }
            )
    return pd.DataFrame(rows, columns=["group", "label", "n", "k", "expected_best_improvement"])


def _paired_fields(prefix: str) -> list[str]:
    return [prefix + n for n in _PAIRED]


def _paired_row(
    comparison: Comparison, a: Group, b: Group, options: Options, prefix: str = ""
) -> dict[str, Any]:
    matched = pairs(a, b, comparison.grouping)
    result = stats.paired_comparison(
        [improvement_of(x) for x, _ in matched],
        [improvement_of(y) for _, y in matched],
        **_ci_kwargs(options),
    )
    return {
        f"{prefix}n_pairs": result.n,
        f"{prefix}mean_diff": _nan(result.mean_diff),
        f"{prefix}diff_low": _nan(result.low),
        f"{prefix}diff_high": _nan(result.high),
        f"{prefix}sd_diff": _nan(result.sd_diff),
        f"{prefix}d_z": _nan(result.d_z),
        f"{prefix}p_value": _nan(result.p_value),
        f"{prefix}note": result.note,
    }


def _differs(a: Group, b: Group, follows: dict[str, str] | None = None) -> list[str]:
    """The factors on which the groups differ; one that follows another (a driver zipped with
    its agent) counts with its leader, so agent stacks compare as one factor."""
    follows = follows or {}
    return [k for k, v in a.key if b.factors.get(k) != v and k not in follows]


def paired_table(comparison: Comparison, options: Options) -> pd.DataFrame:
    """A vs B on paired cells: every group against ``--baseline-group``, or else every two groups
    that differ in exactly one factor (a controlled comparison) and share at least one pair."""
    groups = comparison.groups
    follows = comparison.hidden_factors()[1]
    candidates: list[tuple[Group, Group]] = []
    if options.baseline_group and groups:
        refs = select_groups(groups, options.baseline_group)
        candidates = [(g, r) for g in groups if g not in refs for r in refs]
    else:
        candidates = [
            (a, b)
            for a, b in itertools.combinations(groups, 2)
            if len(_differs(a, b, follows)) == 1
        ]
    rows = []
    for a, b in candidates:
        if not pairs(a, b, comparison.grouping):
            continue
        differs = _differs(a, b, follows)
        rows.append(
            {
                "a": a.label,
                "b": b.label,
                "label_a": comparison.short(a),
                "label_b": comparison.short(b),
                "differs_in": ",".join(differs),
                **_paired_row(comparison, a, b, options),
            }
        )
    columns = ["a", "b", "label_a", "label_b", "differs_in", "n_pairs", "mean_diff"]
    columns += ["diff_low", "diff_high", "sd_diff", "d_z", "p_value", "note"]
    table = pd.DataFrame(rows, columns=columns)
    ps = table["p_value"].to_numpy(dtype=float)
    q = np.full(ps.shape, np.nan)
    finite = np.isfinite(ps)
    if finite.any():
        q[finite] = scipy_stats.false_discovery_control(ps[finite], method="bh")
    table.insert(table.columns.get_loc("p_value") + 1, "q_value", q)
    return table


def driver_effect_table(comparison: Comparison, options: Options) -> pd.DataFrame:
    """Within one scaffold (every factor but the driver equal): the spread of the drivers' mean
    improvements, and each driver against the best and the worst, paired."""
    rows = []
    if "driver" in comparison.grouping:
        families: dict[tuple[tuple[str, str], ...], list[Group]] = {}
        for g in comparison.groups:
            families.setdefault(tuple((k, v) for k, v in g.key if k != "driver"), []).append(g)
        for family_key, members in families.items():
            if len(members) < 2:
                continue
            means = {m.label: float(np.mean([improvement_of(c) for c in m.cells])) for m in members}
            best = max(members, key=lambda m: means[m.label])
            worst = min(members, key=lambda m: means[m.label])
            spread_range, spread_sd = stats.spread(list(means.values()))
            scaffold = ",".join(f"{k}={v}" for k, v in family_key) or "all"
            varying = [v for k, v in family_key if k not in comparison.constant]
            short = " · ".join(varying) or scaffold
            for m in members:
                row: dict[str, Any] = {
                    "scaffold": scaffold,
                    "scaffold_label": short,
                    "driver": m.factors["driver"],
                    "group": m.label,
                    "n": len(m.cells),
                    "mean_improvement": _nan(means[m.label]),
                    "spread_range": _nan(spread_range),
                    "spread_sd": _nan(spread_sd),
                    "is_best": m is best,
                    "is_worst": m is worst,
                }
                for prefix, other in (("vs_best_", best), ("vs_worst_", worst)):
                    if m is other:
                        row.update(dict.fromkeys(_paired_fields(prefix), float("nan")))
                        row[f"{prefix}n_pairs"], row[f"{prefix}note"] = 0, "itself"
                    else:
                        row.update(_paired_row(comparison, m, other, options, prefix))
                rows.append(row)
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=DRIVER_COLUMNS)


def _axis_points(
    cell: dict[str, Any], subs: list[dict[str, Any]], column: str
) -> tuple[list[float], list[float], list[float]] | None:
    """(x of valid submissions, their scores, x of every submission); None without data."""
    ordered = sorted(subs, key=lambda s: s["submission_id"])
    xs_all: list[float] = []
    xs: list[float] = []
    scores: list[float] = []
    for ordinal, s in enumerate(ordered, start=1):
        x = ordinal if column == "ordinal" else s.get(column)
        if x is None:
            continue
        xs_all.append(float(x))
        if s.get("valid") and s.get("score") is not None:
            xs.append(float(x))
            scores.append(float(s["score"]))
    if column != "ordinal" and ordered and not xs_all:
        return None  # e.g. tokens of a run without a driver: not on this axis at all
    return xs, scores, xs_all


def _grid(top: float, points: int, steps: Sequence[float]) -> np.ndarray:
    """Evenly spaced points from 0 to ``top`` plus every valid submission's position, so each
    step is drawn where it happened; an even point within rounding of a step gives way to it.

    With more distinct positions than ``points`` (a large campaign), the even points alone: the
    bootstrap band costs resamples x runs x grid points per group."""
    even = np.linspace(0.0, top, points)
    events = np.unique(np.asarray(steps, dtype=float))
    if events.size > points:
        return even
    if events.size:
        gap = np.min(np.abs(even[:, None] - events[None, :]), axis=1)
        even = even[gap > 1e-9 * top]
    return np.union1d(even, events)


def scaling_table(
    comparison: Comparison, subs_by_cell: dict[str, list[dict[str, Any]]], options: Options
) -> pd.DataFrame:
    """Best-so-far improvement against time, tokens, cost and submissions: per group, the mean
    over its cells on a grid common to all groups, with a bootstrap CI band.

    The grid runs from 0 to the furthest any cell got on the axis (its last submission or its
    end: agent seconds, driver tokens, dollars); a cell that stopped earlier keeps its last
    best-so-far value, which is what it delivered."""
    frames = []
    for axis, column, end_column, _ in SCALING_AXES:
        points: dict[str, tuple[dict[str, Any], tuple[list[float], list[float], list[float]]]] = {}
        top = 0.0
        for g in comparison.groups:
            for c in g.cells:
                found = _axis_points(c, subs_by_cell.get(c["cell_id"], []), column)
                end = c.get(end_column) if end_column else None
                if found is None or (column != "ordinal" and not found[2] and end is None):
                    continue
                points[c["cell_id"]] = (c, found)
                top = max([top, *found[2], *([float(end)] if end is not None else [])])
        if top <= 0:
            continue
        if column == "ordinal":
            grid = np.arange(0, int(top) + 1, dtype=float)
        else:
            steps = [x for _, found in points.values() for x in found[0]]
            grid = _grid(top, options.grid_points, steps)
        for g in comparison.groups:
            curves = [
                stats.best_so_far(found[0], found[1], _dev_baseline(c), grid)
                for c, found in (points[c["cell_id"]] for c in g.cells if c["cell_id"] in points)
            ]
            if not curves:
                continue
            mean, low, high = stats.mean_band(np.vstack(curves), **_ci_kwargs(options))
            frames.append(
                pd.DataFrame(
                    {
                        "group": g.label,
                        "label": comparison.short(g),
                        "axis": axis,
                        "x": grid,
                        "n": len(curves),
                        "mean": mean,
                        "low": low if low is not None else np.nan,
                        "high": high if high is not None else np.nan,
                    }
                )
            )
    columns = ["group", "label", "axis", "x", "n", "mean", "low", "high"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _dev_baseline(cell: dict[str, Any]) -> float:
    """The baseline the submissions' (dev) scores are set against: under sealed the baseline on
    dev, which the agent saw; otherwise the one baseline."""
    value = cell.get("dev_baseline")
    return float(value if value is not None else cell["baseline"])


def _group_of(groups: Sequence[Group]) -> dict[str, str]:
    return {c["cell_id"]: g.label for g in groups for c in g.cells}


def cells_frame(
    cells: Sequence[dict[str, Any]],
    groups: Sequence[Group],
    floors: dict[tuple[str, str], float | None],
) -> pd.DataFrame:
    """Every cell of the store (any status), axes flattened to ``axis.<name>`` columns, with the
    group it counted in (empty when left out) and the values the statistics used."""
    group_of = _group_of(groups)
    rows = []
    for c in cells:
        row = {k: v for k, v in c.items() if k not in ("axes", "config")}
        for name, value in (c.get("axes") or {}).items():
            plain = isinstance(value, str | int | float)
            row[f"axis.{name}"] = value if plain else json.dumps(value)
        row["config"] = json.dumps(c.get("config"), sort_keys=True)
        row["group"] = group_of.get(c["cell_id"], "")
        counted = c["cell_id"] in group_of
        improvement = improvement_of(c) if counted else None
        f = factors(c)
        floor = floors.get((f["task"], f["model"])) if counted else None
        row["score_used"] = _nan(score_of(c) if counted else None)
        row["improvement_used"] = _nan(improvement)
        row["noise_floor"] = _nan(floor)
        row["clears_noise"] = (
            None
            if improvement is None or floor is None or not np.isfinite(floor)
            else bool(improvement > floor)
        )
        rows.append(row)
    return pd.DataFrame(rows)


def submissions_frame(
    subs: Sequence[dict[str, Any]], cells: Sequence[dict[str, Any]], groups: Sequence[Group]
) -> pd.DataFrame:
    """Every submission of the store with its cell's group (empty when the cell was left out)."""
    group_of = _group_of(groups)
    frame = pd.DataFrame(list(subs))
    if frame.empty:
        from autorl_campaign.store import SUBMISSION_COLUMNS

        frame = pd.DataFrame(columns=list(SUBMISSION_COLUMNS))
    frame["group"] = [group_of.get(cid, "") for cid in frame["cell_id"]]
    return frame
