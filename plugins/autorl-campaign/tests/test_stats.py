"""Every estimator of autorl_campaign.stats against a value worked out by hand (in the comments)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from autorl_campaign import stats

# mean_ci --------------------------------------------------------------------------------------


def test_mean_ci_of_two_runs_spans_both() -> None:
    # [0, 10]: a resample of two draws has mean 0 (p 1/4), 5 (p 1/2) or 10 (p 1/4). The 2.5th and
    # 97.5th percentiles fall in the atoms at 0 and 10 (each holds 25 % > 2.5 %): CI = [0, 10].
    est = stats.mean_ci([0.0, 10.0])
    assert (est.n, est.mean, est.low, est.high, est.note) == (2, 5.0, 0.0, 10.0, "")


def test_mean_ci_of_three_runs_hits_the_extreme_atoms() -> None:
    # [4, 6, 8]: the resampled mean is 4 only when all three draws are 4: (1/3)^3 = 1/27 = 3.7 %,
    # more than the 2.5 % tail, so the 2.5th percentile is 4; likewise the 97.5th is 8.
    # mean = (4 + 6 + 8) / 3 = 6.
    est = stats.mean_ci([8.0, 4.0, 6.0])
    assert (est.mean, est.low, est.high) == (6.0, 4.0, 8.0)


def test_mean_ci_matches_normal_theory_on_a_larger_sample() -> None:
    # 0..19: mean 9.5; population SD sqrt((20^2 - 1) / 12) = sqrt(33.25) = 5.766; the bootstrap
    # SE of the mean is 5.766 / sqrt(20) = 1.289; a normal 95 % interval is
    # 9.5 -+ 1.96 * 1.289 = [6.97, 12.03]. The percentile bootstrap must land within 0.3 of it.
    est = stats.mean_ci(list(range(20)))
    assert est.mean == 9.5
    assert est.low == pytest.approx(6.97, abs=0.3)
    assert est.high == pytest.approx(12.03, abs=0.3)


def test_mean_ci_is_reproducible_and_depends_on_the_seed() -> None:
    data = [0.3, 1.7, 2.2, 5.9, 4.1, 3.3, 0.8]
    assert stats.mean_ci(data) == stats.mean_ci(data)
    assert stats.mean_ci(data, seed=1) != stats.mean_ci(data, seed=2)


def test_mean_ci_of_one_run_or_none_says_why() -> None:
    one = stats.mean_ci([3.5])
    assert (one.n, one.mean, one.low, one.high) == (1, 3.5, None, None)
    assert "one run" in one.note
    # None and NaN are not runs
    none = stats.mean_ci([None, float("nan")])
    assert (none.n, none.mean, none.low, none.high, none.note) == (0, None, None, None, "no runs")


def test_mean_ci_of_identical_runs_is_a_point() -> None:
    # every resample of [3, 3, 3] has mean 3
    assert stats.mean_ci([3.0, 3.0, 3.0]) == stats.Estimate(3, 3.0, 3.0, 3.0)


# pass@k: expected best of k --------------------------------------------------------------------


def test_expected_best_of_k_by_hand() -> None:
    # sorted x = (4, 6, 8), n = 3.
    # k=1: weights C(i-1, 0) / C(3, 1) = 1/3 each: (4 + 6 + 8) / 3 = 6.
    # k=2: C(0,1)=0, C(1,1)=1, C(2,1)=2 over C(3,2)=3: (0*4 + 1*6 + 2*8) / 3 = 22/3 = 7.333;
    #      by enumeration: max{4,6}=6, max{4,8}=8, max{6,8}=8 -> (6 + 8 + 8) / 3 = 22/3.
    # k=3: only the full set: 8.
    assert stats.expected_best_of_k([8.0, 4.0, 6.0]) == pytest.approx([6.0, 22 / 3, 8.0])


def test_expected_best_of_k_equals_enumeration() -> None:
    values = [0.0, 2.0, 1.0, 10.0, -3.0, 4.0]
    got = stats.expected_best_of_k(values)
    for k in range(1, len(values) + 1):
        subsets = list(itertools.combinations(values, k))
        assert got[k - 1] == pytest.approx(sum(max(s) for s in subsets) / len(subsets))
    assert stats.expected_best_of_k([]) == []


# noise floor ------------------------------------------------------------------------------------


def test_noise_floor_from_the_evaluator_se() -> None:
    # one cached baseline (40) with SE 1: sigma = 1, floor = 2 * sqrt(2) * 1 = 2.828
    nf = stats.noise_floor([1.0, 1.0, 1.0], [40.0, 40.0, 40.0])
    assert (nf.eval_se, nf.n_baselines, nf.baseline_sd, nf.sigma) == (1.0, 1, None, 1.0)
    assert nf.floor == pytest.approx(2.828427, abs=1e-6)
    assert nf.clears(2.9) is True
    assert nf.clears(2.8) is False


def test_noise_floor_from_distinct_baselines() -> None:
    # baselines 20, 22, 24: mean 22, squared deviations 4 + 0 + 4 = 8, / (3 - 1) = 4, SD = 2;
    # floor = 2 * sqrt(2) * 2 = 5.657
    nf = stats.noise_floor([None, None, None], [20.0, 22.0, 24.0])
    assert (nf.eval_se, nf.n_baselines, nf.baseline_sd, nf.sigma) == (None, 3, 2.0, 2.0)
    assert nf.floor == pytest.approx(5.656854, abs=1e-6)


def test_noise_floor_takes_the_larger_noise_estimate() -> None:
    # SE 3 > SD 2 of the baselines: sigma = 3, floor = 2 * sqrt(2) * 3 = 8.485
    nf = stats.noise_floor([3.0, 3.0], [20.0, 22.0, 24.0])
    assert nf.sigma == 3.0
    assert nf.floor == pytest.approx(8.485281, abs=1e-6)


def test_noise_floor_unknown_without_se_or_repeated_baselines() -> None:
    nf = stats.noise_floor([None], [40.0, 40.0])
    assert (nf.sigma, nf.floor, nf.clears(10.0)) == (None, None, None)


# paired comparison ------------------------------------------------------------------------------


def test_paired_comparison_by_hand() -> None:
    # A = (4, 6, 8), B = (1, 2, 0): d = (3, 4, 8), mean 5.
    # SD: deviations -2, -1, 3 -> 4 + 1 + 9 = 14, / 2 = 7 -> sqrt(7) = 2.6458;
    # d_z = 5 / 2.6458 = 1.890.
    # Sign flips: 2^3 = 8 equally likely patterns; only (+,+,+) and (-,-,-) reach |mean| >= 5,
    # so the two-sided p = 2 / 8 = 0.25 (exact: 8 <= 9999 resamples).
    # CI: like [4, 6, 8] above, each extreme atom (3 or 8) has 1/27 > 2.5 %: [3, 8].
    r = stats.paired_comparison([4.0, 6.0, 8.0], [1.0, 2.0, 0.0])
    assert (r.n, r.mean_diff, r.p_value, r.low, r.high) == (3, 5.0, 0.25, 3.0, 8.0)
    assert r.sd_diff == pytest.approx(math.sqrt(7))
    assert r.d_z == pytest.approx(5 / math.sqrt(7))
    assert r.note == ""


def test_paired_comparison_of_ten_consistent_wins() -> None:
    # d = 1..10, all positive: of 2^10 = 1024 sign patterns only all-plus and all-minus reach
    # |mean| >= 5.5: p = 2 / 1024 = 0.001953.
    r = stats.paired_comparison(list(range(2, 12)), [1.0] * 10)
    assert r.p_value == pytest.approx(2 / 1024)


def test_paired_comparison_with_equal_differences_has_no_d_z() -> None:
    # d = (1, 1): mean 1, SD 0; patterns: sums 2, 0, 0, -2 -> |sum| >= 2 in 2 of 4: p = 0.5
    r = stats.paired_comparison([4.0, 6.0], [3.0, 5.0])
    assert (r.mean_diff, r.sd_diff, r.d_z, r.p_value) == (1.0, 0.0, None, 0.5)
    assert "sd = 0" in r.note


def test_paired_comparison_of_one_pair_cannot_reject() -> None:
    # one pair: the two sign patterns are d and -d, both as extreme: p = 1
    r = stats.paired_comparison([5.0], [2.0])
    assert (r.n, r.mean_diff, r.sd_diff, r.d_z, r.p_value, r.low) == (1, 3.0, None, None, 1.0, None)
    assert "one pair" in r.note
    assert stats.paired_comparison([], []).note == "no pairs"
    with pytest.raises(ValueError, match="differ in length"):
        stats.paired_comparison([1.0, 2.0], [1.0])


# scaling curves ---------------------------------------------------------------------------------


def test_best_so_far_is_a_step_function_from_zero() -> None:
    # submissions at x = 10, 20, 30 scoring 50, 45, 60 against a baseline of 48:
    # before 10: nothing delivered -> 0; from 10: 50 - 48 = 2; at 20 the best is still 50 -> 2;
    # from 30: 60 - 48 = 12.
    got = stats.best_so_far([20, 10, 30], [45, 50, 60], 48.0, [0, 5, 10, 15, 25, 30, 40])
    assert got.tolist() == [0, 0, 2, 2, 2, 12, 12]
    # a first submission below the baseline is a negative improvement, not 0
    assert stats.best_so_far([10], [40], 48.0, [0, 10]).tolist() == [0, -8]
    assert stats.best_so_far([], [], 48.0, [0, 10]).tolist() == [0, 0]


def test_mean_band_of_curves() -> None:
    # three runs' best-so-far after 0, 1, 2 submissions:
    #   (0, 2, 4), (0, 6, 6), (0, 0, 8) -> mean (0, 8/3, 6);
    # at 0 every run is 0, so the band is [0, 0]; in the last column the atoms 4 and 8 (1/27
    # each) are the band's ends, as for [4, 6, 8] above.
    curves = np.array([[0, 2, 4], [0, 6, 6], [0, 0, 8]], dtype=float)
    mean, low, high = stats.mean_band(curves)
    assert mean == pytest.approx([0, 8 / 3, 6])
    assert low is not None and high is not None
    assert (low[0], high[0], low[2], high[2]) == (0.0, 0.0, 4.0, 8.0)
    one_mean, one_low, one_high = stats.mean_band(curves[:1])
    assert one_mean.tolist() == [0, 2, 4]
    assert (one_low, one_high) == (None, None)


def test_spread_of_group_means() -> None:
    # means 6 and 1: range 5; SD = |6 - 1| / sqrt(2) = 3.5355
    rng, sd = stats.spread([6.0, 1.0])
    assert rng == 5.0
    assert sd == pytest.approx(5 / math.sqrt(2))
    assert stats.spread([6.0]) == (None, None)
