"""The shop: the catalogue plus a BM25 index over title, attributes, features and description.

Needs ``rank_bm25`` (and numpy); everything else is standard library and ``autorl_task_common``
(copied into the kit). One :class:`Shop` is shared by every session of an evaluation: it is
read-only once built.
"""

from __future__ import annotations

from collections.abc import Sequence

from autorl_task_common.bm25 import BM25Ranking

from .catalog import Product
from .text import STOPWORDS, tokenize

SEARCH_RETURN_N = 50
"""Results kept per search (the reference's ``SEARCH_RETURN_N``): five pages of ten."""


def index_tokens(text: str) -> list[str]:
    return [t for t in tokenize(text) if t not in STOPWORDS]


def document_text(product: Product) -> str:
    """What the index sees of a product."""
    return " ".join(
        [
            product.title,
            " ".join(product.attributes),
            " ".join(product.features),
            product.description,
        ]
    )


class Shop:
    """A catalogue with BM25 search; products are looked up by id (asin) or exact title."""

    def __init__(self, products: Sequence[Product]) -> None:
        if not products:
            raise ValueError("Shop needs at least one product (the catalogue is empty)")
        self.products: tuple[Product, ...] = tuple(products)
        self.by_asin: dict[str, Product] = {}
        for product in self.products:
            key = product.asin.lower()
            if key in self.by_asin:
                raise ValueError(f"duplicate product id {product.asin!r} in the catalogue")
            self.by_asin[key] = product
        self.by_title: dict[str, Product] = {}
        for product in self.products:
            self.by_title.setdefault(product.title.lower().strip(), product)
        self._bm25 = BM25Ranking(
            [index_tokens(document_text(p)) for p in self.products], "the WebShop environment"
        )

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[Product]:
        """The top ``k`` products for ``query`` by BM25 score (ties keep catalogue order)."""
        return [self.products[i] for i in self._bm25.top(index_tokens(query), k)]

    def lookup(self, key: str) -> Product | None:
        """The product with id or title ``key`` (case-insensitive), else None."""
        key = key.lower().strip()
        return self.by_asin.get(key) or self.by_title.get(key)
