"""Tokens for the search index and the normalisation the rule judge compares answers with.

Standard library only (copied into the workspace kit). Not shared with WebShop's ``text.py``:
tokens (accents folded here) and stopwords differ, and the scores use them.
"""

from __future__ import annotations

import re
import unicodedata

_WORD_RE = re.compile(r"[a-z0-9]+")
ARTICLES = frozenset({"a", "an", "the"})
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
        "did",
        "does",
        "every",
        "for",
        "from",
        "in",
        "into",
        "is",
        "it",
        "its",
        "list",
        "name",
        "of",
        "on",
        "or",
        "other",
        "that",
        "the",
        "to",
        "was",
        "what",
        "where",
        "which",
        "who",
        "whose",
        "with",
    }
)


def fold(text: str) -> str:
    """Lower case without accents, so 'Zoë' and 'zoe' compare equal."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def words(text: str) -> list[str]:
    return _WORD_RE.findall(fold(text))


def index_tokens(text: str) -> list[str]:
    """What BM25 indexes and queries: folded words without stopwords."""
    return [w for w in words(text) if w not in STOPWORDS]


def normalize_answer(text: str) -> str:
    """Folded words without articles or punctuation: 'The Kelp Sea.' -> 'kelp sea'."""
    return " ".join(w for w in words(text) if w not in ARTICLES)
