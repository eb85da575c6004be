"""Text helpers shared by the search index and the reward: tokens, content words, fuzzy ratio.

Standard library only (this module is copied into the workspace kit). The fuzzy ratio follows the
``token_set_ratio`` algorithm of fuzzywuzzy/thefuzz (the reference reward uses it), computed with
:class:`difflib.SequenceMatcher` as fuzzywuzzy's pure-Python path does.
Not shared with DeepSearchQA's ``text.py``: tokens and stopwords differ, and the scores use them.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "i",
        "in",
        "is",
        "it",
        "its",
        "looking",
        "me",
        "my",
        "need",
        "of",
        "on",
        "or",
        "please",
        "price",
        "than",
        "that",
        "the",
        "this",
        "to",
        "want",
        "was",
        "were",
        "will",
        "with",
        "would",
        "lower",
        "dollars",
        "less",
        "under",
        "i'm",
        "im",
        "find",
        "buy",
        "get",
        "some",
        "something",
        "which",
        "who",
        "one",
        "pair",
        "set",
        "pack",
    }
)
"""Words that carry no product information (instruction filler and function words)."""


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (letters/digits, keeping ``men's``-style possessives)."""
    return _WORD_RE.findall(text.lower())


def content_words(text: str) -> list[str]:
    """Tokens without stopwords or bare numbers, in order, deduplicated.

    Stands in for the reference's spaCy noun extraction (no spaCy model ships offline here).
    """
    seen: dict[str, None] = {}
    for token in tokenize(text):
        if token in STOPWORDS or token.replace(".", "").isdigit():
            continue
        seen.setdefault(token, None)
    return list(seen)


def _full_process(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def _ratio(a: str, b: str) -> int:
    if not a or not b:
        return 0
    return round(100 * SequenceMatcher(None, a, b).ratio())


def token_set_ratio(a: str, b: str) -> int:
    """0-100 similarity that ignores word order and duplicated words (fuzzywuzzy's definition)."""
    tokens_a = set(_full_process(a).split())
    tokens_b = set(_full_process(b).split())
    if not tokens_a or not tokens_b:
        return 0
    common = " ".join(sorted(tokens_a & tokens_b))
    only_a = " ".join(sorted(tokens_a - tokens_b))
    only_b = " ".join(sorted(tokens_b - tokens_a))
    combined_a = f"{common} {only_a}".strip()
    combined_b = f"{common} {only_b}".strip()
    return max(
        _ratio(common, combined_a), _ratio(common, combined_b), _ratio(combined_a, combined_b)
    )
