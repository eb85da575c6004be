"""Token estimates for backends that count nothing themselves (scripted, fake servers)."""

from __future__ import annotations

import math


def estimate_tokens(text: str) -> int:
    """max(words, chars / 4): close enough to BPE counts for budgets, and deterministic."""
    if not text:
        return 0
    return max(len(text.split()), math.ceil(len(text) / 4))
