"""The statistics tables as rows of text, shared by the terminal and the HTML page.

One formatting for both views: a number printed in the terminal is the number on the page.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from autorl_campaign.analysis import Comparison
from autorl_campaign.stats import NOISE_Z

MISSING = "n/a"
PASS_AT_K_COLUMNS = 10  # the terminal shows k = 1..10; the page and the exports show every k


def num(value: Any, digits: int = 2) -> str:
    """A number with ``digits`` decimals; a dash for missing values."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    return f"{float(value):.{digits}f}"


def interval(low: Any, high: Any, digits: int = 2) -> str:
    if num(low) == MISSING or num(high) == MISSING:
        return MISSING
    return f"[{num(low, digits)}, {num(high, digits)}]"


def with_ci(mean: Any, low: Any, high: Any) -> str:
    """``6.00 [4.00, 8.00]``; the mean alone when there is no CI."""
    ci = interval(low, high)
    return num(mean) if ci == MISSING else f"{num(mean)} {ci}"


def _drop_empty_notes(rows: pd.DataFrame) -> pd.DataFrame:
    if "note" in rows and not rows["note"].astype(bool).any():
        return rows.drop(columns="note")
    return rows


def verdict(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "unknown"
    return "yes" if value else "no"


def p_text(value: Any) -> str:
    return num(value, 3) if num(value) == MISSING or float(value) >= 0.001 else "<0.001"


def ci_name(comparison: Comparison) -> str:
    return f"{comparison.options.confidence * 100:g}% CI"


NOISE_RULE = (
    f"an improvement clears the noise floor when it exceeds {NOISE_Z:g} x sqrt(2) x sigma, "
    "sigma = max(evaluator SE of the baseline, SD of distinct baseline evaluations): "
    f"{NOISE_Z:g} standard errors of the difference of two independent evaluations"
)


def groups_rows(comparison: Comparison) -> pd.DataFrame:
    table = comparison.tables["groups"]
    if table.empty:
        return pd.DataFrame(columns=["group", "n"])
    ci = ci_name(comparison)
    rows = pd.DataFrame(
        {
            "group": table["label"],
            "n": [num(v) for v in table["n"]],
            "no valid": [num(v) for v in table["n_no_valid"]],
            f"score ({ci})": [
                with_ci(m, lo, hi)
                for m, lo, hi in zip(
                    table["mean_score"], table["score_low"], table["score_high"], strict=True
                )
            ],
            f"improvement ({ci})": [
                with_ci(m, lo, hi)
                for m, lo, hi in zip(
                    table["mean_improvement"],
                    table["improvement_low"],
                    table["improvement_high"],
                    strict=True,
                )
            ],
            "noise floor": [num(v) for v in table["noise_floor"]],
            "clears floor": [verdict(v) for v in table["clears_noise"]],
            "CI > 0": [verdict(v) for v in table["ci_above_zero"]],
            "selection gap": [num(v) for v in table["mean_selection_gap"]],
            "note": table["note"],
        }
    )
    if table["mean_selection_gap"].isna().all():  # reference runs: no sealed test, no gap
        rows = rows.drop(columns="selection gap")
    return _drop_empty_notes(rows)


def score_caption(comparison: Comparison) -> str:
    """What "score" means for this comparison's protocol."""
    if comparison.protocol == "sealed":
        return (
            "protocol sealed: score = the test score of each run's one selected checkpoint; "
            "improvement = score - baseline on test; selection gap = mean (dev - test) of the "
            "selected checkpoints"
        )
    return "protocol reference: score = each run's best submission; improvement = best - baseline"


def infra_rows(comparison: Comparison) -> pd.DataFrame:
    """The attempts the harness ended (infra_error), not agent results."""
    table = comparison.tables.get("infra_errors")
    if table is None or table.empty:
        return pd.DataFrame(columns=["cell", "attempt", "run", "cause", "cell now"])
    return pd.DataFrame(
        {
            "cell": table["cell_id"],
            "attempt": [num(v) for v in table["attempt"]],
            "run": table["run_id"],
            "cause": table["infra_cause"],
            "cell now": table["cell_status_now"],
        }
    )


def noise_rows(comparison: Comparison) -> pd.DataFrame:
    table = comparison.tables["noise"]
    return pd.DataFrame(
        {
            "task": table["task"],
            "model": table["model"],
            "cells": [num(v) for v in table["n_cells"]],
            "evaluator SE": [num(v) for v in table["eval_se"]],
            "baseline evals": [num(v) for v in table["n_baselines"]],
            "baseline SD": [num(v) for v in table["baseline_sd"]],
            "sigma": [num(v) for v in table["sigma"]],
            "floor": [num(v) for v in table["floor"]],
        }
    )


def pass_at_k_rows(comparison: Comparison, max_k: int | None = None) -> pd.DataFrame:
    """One row per group, one column per k (up to ``max_k``)."""
    table = comparison.tables["pass_at_k"]
    if table.empty:
        return pd.DataFrame(columns=["group", "n"])
    rows = []
    for label, part in table.groupby("label", sort=False):
        row: dict[str, str] = {"group": str(label), "n": num(int(part["n"].iloc[0]))}
        for k, value in zip(part["k"], part["expected_best_improvement"], strict=True):
            if max_k is None or k <= max_k:
                row[f"k={k}"] = num(value)
        rows.append(row)
    return pd.DataFrame(rows).fillna(MISSING)


def paired_rows(comparison: Comparison) -> pd.DataFrame:
    table = comparison.tables["paired"]
    ci = ci_name(comparison)
    rows = pd.DataFrame(
        {
            "A": table["label_a"],
            "B": table["label_b"],
            "differs in": table["differs_in"],
            "pairs": [num(v) for v in table["n_pairs"]],
            f"mean A-B ({ci})": [
                with_ci(m, lo, hi)
                for m, lo, hi in zip(
                    table["mean_diff"], table["diff_low"], table["diff_high"], strict=True
                )
            ],
            "d_z": [num(v) for v in table["d_z"]],
            "p": [p_text(v) for v in table["p_value"]],
            "q (BH)": [p_text(v) for v in table["q_value"]],
            "note": table["note"],
        }
    )
    return _drop_empty_notes(rows)


def driver_rows(comparison: Comparison) -> pd.DataFrame:
    table = comparison.tables["driver_effect"]
    if table.empty:
        return pd.DataFrame(columns=["scaffold", "driver"])

    def versus(prefix: str, row: Any) -> str:
        if row[f"{prefix}note"] == "itself":
            return "(itself)"
        diff, p = row[f"{prefix}mean_diff"], row[f"{prefix}p_value"]
        return f"{num(diff)} p={p_text(p)}"

    return pd.DataFrame(
        {
            "scaffold": table["scaffold_label"],
            "driver": table["driver"],
            "n": [num(v) for v in table["n"]],
            "mean improvement": [num(v) for v in table["mean_improvement"]],
            "vs best": [versus("vs_best_", r) for _, r in table.iterrows()],
            "vs worst": [versus("vs_worst_", r) for _, r in table.iterrows()],
            "range of means": [num(v) for v in table["spread_range"]],
            "SD of means": [num(v) for v in table["spread_sd"]],
        }
    )
