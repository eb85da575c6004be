"""BM25 ranking over ``rank_bm25`` (Okapi BM25), with a deterministic order.

Each task tokenises its own documents and queries (its own stopwords and normalisation); this
ranks them. Needs ``rank_bm25`` (and numpy), imported when an index is built; otherwise standard
library only (copied into the kit).
"""

from __future__ import annotations

from collections.abc import Sequence


class BM25Ranking:
    """An index of token lists; :meth:`top` gives document positions, best first."""

    def __init__(self, documents: Sequence[Sequence[str]], needed_by: str) -> None:
        try:
            from rank_bm25 import BM25Okapi
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                f"{needed_by} needs the rank_bm25 package: pip install rank_bm25"
            ) from exc
        # an empty document would break BM25Okapi's averages: it gets a token no query has
        self._bm25 = BM25Okapi([list(tokens) or ["_"] for tokens in documents])

    def top(self, query: Sequence[str], k: int) -> list[int]:
        """Positions of the ``k`` best documents with a positive score (ties keep document
        order); none for an empty query."""
        if not query or k < 1:
            return []
        scores = self._bm25.get_scores(list(query))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return [i for i in order[:k] if scores[i] > 0]
