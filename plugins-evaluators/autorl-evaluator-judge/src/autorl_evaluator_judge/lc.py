"""Win rates from pairwise preferences, computed by AlpacaEval's own code.

``length_controlled_winrate`` calls ``alpaca_eval.metrics.glm_winrate.get_length_controlled_
winrate`` unchanged. That function always reads a table of per-instruction features from the hub
(``df_gamed.csv``); we give it a local one:

- with the real data (``glm_data_dir`` holding ``df_gamed.csv`` and
  ``instruction_difficulty.csv`` from tatsu-lab/alpaca_eval), AlpacaEval 2.0's GLM
  ``length_controlled_v1`` runs exactly as upstream (instruction difficulty, regularisation
  towards the gamed baselines);
- offline there are no such features for our own prompts, so the GLM must be one that does not
  use them: ``length_controlled_minimal`` (preference ~ tanh(standardised length difference) +
  intercept) or ``length_controlled_noreg``; the feature table we write sets every difficulty to
  0, which these formulas ignore or turn into a zero column.

Preferences follow AlpacaEval: 1 = the reference (``output_1``) wins, 2 = the model
(``output_2``) wins, 1.5 = a draw, NaN = no usable judgment (dropped).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl_evaluator_judge import alpaca

GLMS = ("length_controlled_v1", "length_controlled_minimal", "length_controlled_noreg")
OFFLINE_GLMS = ("length_controlled_minimal", "length_controlled_noreg")
MIN_JUDGED = 5
"""The GLM is fit with 5-fold cross-validation grouped by instruction: it needs 5 judgments."""


class WinRateError(ConfigError):
    """Too few usable judgments, or a GLM that needs data we do not have."""


def _feature_files(
    glm: str, glm_data_dir: Path | None, indices: Sequence[int], work_dir: Path
) -> dict[str, Path]:
    if glm_data_dir is not None:
        files = {n: Path(glm_data_dir) / n for n in ("df_gamed.csv", "instruction_difficulty.csv")}
        missing = [str(p) for p in files.values() if not p.is_file()]
        if missing:
            raise WinRateError(
                f"length-controlled GLM data missing: {', '.join(missing)}",
                hint="download df_gamed.csv and instruction_difficulty.csv from the hub data set "
                "tatsu-lab/alpaca_eval, or unset glm_data_dir to use an offline GLM",
            )
        return files
    if glm not in OFFLINE_GLMS:
        raise WinRateError(
            f"GLM {glm!r} needs AlpacaEval's instruction difficulties and gamed-baseline "
            "annotations (glm_data_dir)",
            hint=f"set glm_data_dir, or use glm = {OFFLINE_GLMS[0]!r} offline",
        )
    import pandas as pd

    work_dir.mkdir(parents=True, exist_ok=True)
    path = work_dir / "df_gamed.csv"
    top = max(indices, default=0) + 1
    pd.DataFrame(
        {"model": ["none"] * top, "index": range(top), "instruction_difficulty": [0.0] * top}
    ).to_csv(path, index=False)
    return {"df_gamed.csv": path}


def _usable(preference: Any) -> bool:
    """A preference that is a number and not NaN."""
    return preference is not None and preference == preference


def _degenerate(annotations: Sequence[dict[str, Any]], judged: list[dict[str, Any]]) -> str | None:
    """Why the GLM cannot be fit (then LC = raw win rate), or None.

    Two inputs break the upstream fit: every length difference equal (the standardised
    difference is 0/0, NaN, and scikit-learn refuses it; length then explains nothing, so the
    raw rate is the length-controlled one), and one preference for every example (all losses or
    all wins: the L1-regularised fit collapses to weight 0 and predicts 50 %, which would score a
    model that always loses like the references; with no variation, the rate at any length is the
    raw rate).
    """
    deltas = {len(str(a["output_1"])) - len(str(a["output_2"])) for a in annotations}
    if len(deltas) == 1:
        return "every length difference is the same: length explains nothing, LC = raw"
    if len({float(a["preference"]) for a in judged}) == 1:
        return "the judge gave every example the same preference: LC = raw"
    return None


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers; NaN as None (JSON has no NaN)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return value
    if math.isnan(number):
        return None
    return int(number) if float(number).is_integer() and not isinstance(value, float) else number


def length_controlled_winrate(
    annotations: Sequence[dict[str, Any]],
    *,
    glm: str = "length_controlled_minimal",
    glm_data_dir: Path | None = None,
    work_dir: Path,
) -> dict[str, Any]:
    """AlpacaEval's metrics for ``annotations`` (dicts with ``instruction``, ``output_1``,
    ``output_2``, ``generator_1``, ``generator_2``, ``annotator``, ``preference``, ``index``):
    ``length_controlled_winrate``, ``lc_standard_error``, ``win_rate``, ``standard_error``,
    ``discrete_win_rate``, ``n_wins``, ``n_wins_base``, ``n_draws``, ``n_total``."""
    if glm not in GLMS:
        raise WinRateError(f"unknown GLM {glm!r}", hint=f"one of {', '.join(GLMS)}")
    judged = [a for a in annotations if _usable(a.get("preference"))]
    if len(judged) < MIN_JUDGED:
        raise WinRateError(
            f"only {len(judged)} usable judgment(s) of {len(annotations)}: the length-controlled "
            f"win rate needs at least {MIN_JUDGED}",
            hint="evaluate more examples (limit / eval_size), or check the judge's answers in "
            "details.jsonl",
        )
    mods = alpaca.modules()
    fallback = _degenerate(annotations, judged)
    if fallback is not None:
        metrics = mods.glm.get_winrate(list(annotations))
        metrics["length_controlled_winrate"] = metrics["win_rate"]
        metrics["lc_standard_error"] = metrics["standard_error"]
        out = {k: _plain(v) for k, v in metrics.items()}
        out.update(lc_extreme_change=False, glm=glm, lc_fallback=fallback)
        return out
    files = _feature_files(glm, glm_data_dir, [int(a["index"]) for a in annotations], work_dir)
    with alpaca.local_hub_files(files), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # sklearn's notices about its own API
        warnings.simplefilter("ignore", UserWarning)
        metrics = mods.glm.get_length_controlled_winrate(
            list(annotations),
            glm_name=glm,
            save_weights_dir=None,  # upstream default writes into site-packages
            is_warn_extreme_changes=False,  # reported as a metric below instead of a log line
        )
    out = {k: _plain(v) for k, v in metrics.items()}
    out["lc_extreme_change"] = bool(
        mods.glm.get_is_extreme_changes(metrics["win_rate"], metrics["length_controlled_winrate"])
    )
    out["glm"] = glm
    out["lc_fallback"] = None
    return out
