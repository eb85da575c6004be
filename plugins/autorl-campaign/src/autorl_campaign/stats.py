"""The estimators behind ``autorl compare``, on plain arrays.

Formulas and references: docs/campaign-statistics.md.

Each function takes numbers and returns numbers, so every one is checked against a value worked
out by hand in tests/test_stats.py. Resampling uses scipy with a fixed seed: the same store gives
the same report, digit for digit. An estimate that the data cannot support (a CI from one run, a
standardized effect from one pair) is ``None`` with a note saying why, never a made-up number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

CONFIDENCE = 0.95
RESAMPLES = 9999
SEED = 0
# An improvement clears the noise floor when it exceeds NOISE_Z standard errors of a difference of
# two independent evaluations (the best submission's and the baseline's), each with the task's
# evaluation SE sigma: improvement > NOISE_Z * sqrt(2) * sigma. 2 is the rounded z of a two-sided
# 95 % test; sqrt(2) because an improvement subtracts two noisy evaluations, not one.
NOISE_Z = 2.0


@dataclass(frozen=True)
class Estimate:
    """A mean with its bootstrap CI; ``low``/``high`` are None (and ``note`` says why) when the
    data cannot give one."""

    n: int
    mean: float | None
    low: float | None
    high: float | None
    note: str = ""


@dataclass(frozen=True)
class NoiseFloor:
    """How much one evaluation of a (task, model) moves, and the improvement that clears it."""

    eval_se: float | None  # the evaluator's own standard error of the baseline (mean over cells)
    n_baselines: int  # distinct baseline evaluations seen across cells
    baseline_sd: float | None  # their sample SD (ddof=1), when there are at least two
    sigma: float | None  # max(eval_se, baseline_sd): the larger estimate of one evaluation's noise
    floor: float | None  # NOISE_Z * sqrt(2) * sigma

    def clears(self, improvement: float | None) -> bool | None:
        """Whether an improvement exceeds the floor; None when either is unknown."""
        if improvement is None or self.floor is None:
            return None
        return improvement > self.floor


@dataclass(frozen=True)
class Paired:
    """A paired comparison of A against B (differences A - B)."""

    n: int
    mean_diff: float | None
    sd_diff: float | None
    d_z: float | None  # Cohen's d_z = mean / sd of the paired differences
    p_value: float | None  # two-sided, sign-flip permutation test
    low: float | None  # bootstrap CI of the mean difference
    high: float | None
    note: str = ""


def _clean(values: Sequence[float | None] | np.ndarray) -> np.ndarray:
    """The finite values as a float array (None and NaN dropped)."""
    array = np.array([np.nan if v is None else v for v in values], dtype=float)
    return array[np.isfinite(array)]


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def bootstrap_band(
    samples: np.ndarray,
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap CI of the mean along axis 0 (rows = runs), for every column at once.

    Percentile, not BCa: with the 3 to 10 seeds a campaign affords, the bootstrap distribution of
    a mean is discrete with a large atom at the observed mean, and BCa's bias correction (the share
    of resampled means strictly below it) then shifts the whole interval down.
    """
    result = stats.bootstrap(
        (samples,),
        np.mean,
        axis=0,
        vectorized=True,
        method="percentile",
        confidence_level=confidence,
        n_resamples=n_resamples,
        rng=_rng(seed),
    )
    ci = result.confidence_interval
    return np.asarray(ci.low, dtype=float), np.asarray(ci.high, dtype=float)


def mean_ci(
    values: Sequence[float | None] | np.ndarray,
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Estimate:
    """The mean of ``values`` with a percentile-bootstrap CI (Efron & Tibshirani 1993, ch. 13)."""
    x = _clean(values)
    if x.size == 0:
        return Estimate(0, None, None, None, "no runs")
    mean = float(np.mean(x))
    if x.size == 1:
        return Estimate(1, mean, None, None, "one run: no spread to put a CI on")
    low, high = bootstrap_band(x, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return Estimate(int(x.size), mean, float(low), float(high))


def expected_best_of_k(values: Sequence[float | None] | np.ndarray) -> list[float]:
    """E[max of k runs drawn without replacement from these n], for k = 1..n.

    The unbiased estimator of Chen et al. (2021) generalised from pass/fail to scores: with x sorted
    ascending, E_k = sum_i C(i-1, k-1) / C(n, k) * x_(i) (x_(i) is the largest of a k-subset in
    exactly C(i-1, k-1) of the C(n, k) subsets).
    """
    x = np.sort(_clean(values))
    n = x.size
    i = np.arange(1, n + 1)
    return [
        float(np.sum(special.comb(i - 1, k - 1) / special.comb(n, k) * x)) for k in range(1, n + 1)
    ]


def noise_floor(
    baseline_ses: Sequence[float | None], baselines: Sequence[float | None]
) -> NoiseFloor:
    """The noise floor of one (task, model) from its cells' ``baseline_se`` and ``baseline``.

    Identical baselines are one (cached) evaluation; distinct values are separate evaluations,
    whose spread measures the evaluation noise directly (when the evaluator reports no SE, or
    under-reports it: a judge's or an environment's randomness).
    """
    ses = _clean(baseline_ses)
    eval_se = float(np.mean(ses)) if ses.size else None
    distinct = np.unique(np.round(_clean(baselines), 9))
    baseline_sd = float(np.std(distinct, ddof=1)) if distinct.size >= 2 else None
    known = [v for v in (eval_se, baseline_sd) if v is not None]
    sigma = max(known) if known else None
    floor = NOISE_Z * math.sqrt(2.0) * sigma if sigma is not None else None
    return NoiseFloor(eval_se, int(distinct.size), baseline_sd, sigma, floor)


def paired_comparison(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Paired:
    """A vs B on pairs (same task, model, seed, replicate): mean difference, its bootstrap CI,
    Cohen's d_z, and a two-sided permutation p-value that flips the sign of each pair's
    difference (exact when 2^n <= n_resamples)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} and {y.size}")
    if x.size == 0:
        return Paired(0, None, None, None, None, None, None, "no pairs")
    d = x - y
    mean = float(np.mean(d))
    if d.size == 1:  # flipping one difference gives d and -d, equally extreme (scipy needs two)
        note = "one pair: no spread, and a test on one pair cannot reject (p = 1)"
        return Paired(1, mean, None, None, 1.0, None, None, note)
    test = stats.permutation_test(
        (x, y),
        lambda u, v, axis: np.mean(u - v, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        rng=_rng(seed),
    )
    p_value = float(test.pvalue)
    sd = float(np.std(d, ddof=1))
    note = ""
    if sd > 0:
        d_z = mean / sd
    else:
        d_z = None
        note = "all paired differences are equal: d_z undefined (sd = 0)"
    low, high = bootstrap_band(d, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return Paired(int(d.size), mean, sd, d_z, p_value, float(low), float(high), note)


def best_so_far(
    xs: Sequence[float] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    baseline: float,
    grid: Sequence[float] | np.ndarray,
) -> np.ndarray:
    """Best-so-far improvement over the baseline at each grid point (a step function).

    ``xs``/``scores`` are the valid submissions' positions on the axis (seconds, tokens, dollars,
    submission count) and scores. Before the first valid submission the improvement is 0: the
    base model is what the run has delivered.
    """
    x = np.asarray(xs, dtype=float)
    s = np.asarray(scores, dtype=float)
    g = np.asarray(grid, dtype=float)
    if x.size == 0:
        return np.zeros(g.shape)
    order = np.argsort(x, kind="stable")
    x, best = x[order], np.maximum.accumulate(s[order])
    reached = np.searchsorted(x, g, side="right")  # how many submissions happened by each point
    return np.where(reached > 0, best[np.maximum(reached - 1, 0)] - baseline, 0.0)


def spread(means: Sequence[float] | np.ndarray) -> tuple[float | None, float | None]:
    """Range (max - min) and sample SD (ddof=1) of group means; None for fewer than two."""
    m = _clean(means)
    if m.size < 2:
        return None, None
    return float(np.ptp(m)), float(np.std(m, ddof=1))


def mean_band(
    curves: np.ndarray,
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Pointwise mean of curves (rows = runs, columns = grid points) and its bootstrap CI band;
    no band from a single run."""
    c = np.atleast_2d(np.asarray(curves, dtype=float))
    mean = np.mean(c, axis=0)
    if c.shape[0] < 2:
        return mean, None, None
    low, high = bootstrap_band(c, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return mean, low, high
