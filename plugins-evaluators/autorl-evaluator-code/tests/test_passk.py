"""pass@k against worked examples and the closed form with exact binomials."""

from __future__ import annotations

from math import comb

import pytest
from autorl_evaluator_code.passk import mean_pass_at_k, pass_at_k


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (1, 1, 1, 1.0),
        (1, 0, 1, 0.0),
        (10, 3, 1, 0.3),  # pass@1 is the fraction correct
        (5, 2, 2, 1 - comb(3, 2) / comb(5, 2)),  # 1 - 3/10 = 0.7
        (10, 8, 3, 1.0),  # fewer than k wrong samples: some draw of k must hold a pass
        (200, 1, 100, 0.5),
    ],
)
def test_worked_examples(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_matches_exact_binomials_where_they_are_huge() -> None:
    n, c, k = 1000, 37, 100
    exact = 1 - comb(n - c, k) / comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-9)


def test_mean_and_errors() -> None:
    assert mean_pass_at_k([(2, 1), (2, 0)], 1) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="at least 5 samples"):
        pass_at_k(3, 1, 5)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(3, 4, 1)
