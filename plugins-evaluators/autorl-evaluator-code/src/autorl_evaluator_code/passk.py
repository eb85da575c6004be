"""The unbiased pass@k estimator of Chen et al. (2021), "Evaluating Large Language Models
Trained on Code": from ``n`` samples with ``c`` correct, ``1 - C(n-c, k) / C(n, k)``.

Computed as ``1 - prod_{i=n-c+1}^{n} (1 - k/i)``, which never forms the huge binomials.
"""

from __future__ import annotations

from collections.abc import Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of ``k`` samples drawn from the ``n`` is correct."""
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and k >= 1, got n={n}, c={c}, k={k}")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per problem, got n={n}")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """Mean pass@k over problems given ``(n, c)`` per problem."""
    if not counts:
        raise ValueError("mean_pass_at_k needs at least one problem")
    return sum(pass_at_k(n, c, k) for n, c in counts) / len(counts)
