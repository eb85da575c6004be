"""BM25 over the shipped encyclopedia (``rank_bm25``, the same library the WebShop task uses).

A hit is a plain dict ``{"title", "snippet", "url"}`` (what every search backend returns), so
results record to JSON and replay unchanged. Needs ``rank_bm25`` (and numpy); copied into the kit
(ranking: ``autorl_task_common.bm25``, copied too).
"""

from __future__ import annotations

from collections.abc import Sequence

from autorl_task_common.bm25 import BM25Ranking

from .corpus import Document
from .text import index_tokens

SNIPPET_CHARS = 240
"""Entries put the facts a question needs first; 240 characters hold them all (longest: 204)."""


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " ..."


class BM25Index:
    """Documents with a BM25 index over title (counted twice) and text."""

    def __init__(self, documents: Sequence[Document]) -> None:
        if not documents:
            raise ValueError("the search corpus is empty")
        self.documents = tuple(documents)
        self._bm25 = BM25Ranking(
            [index_tokens(f"{d.title} {d.title} {d.text}") for d in self.documents],
            "the bm25 search backend",
        )

    def search(self, query: str, k: int) -> list[dict[str, str]]:
        """The top ``k`` documents with a positive score (ties keep corpus order)."""
        return [
            {
                "title": self.documents[i].title,
                "snippet": snippet(self.documents[i].text),
                "url": self.documents[i].url or f"corpus://{self.documents[i].id}",
            }
            for i in self._bm25.top(index_tokens(query), k)
        ]
