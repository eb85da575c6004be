"""The search backends this package registers (kind ``search_backend``).

* ``bm25`` (default, offline): BM25 over the shipped encyclopedia, or over any corpus file given
  as ``corpus_path`` (a JSON list of ``{"id", "title", "text"}``).
* ``brave`` (online): the Brave Search web API (``GET /res/v1/web/search``, header
  ``X-Subscription-Token``) over httpx. The key comes from the harness environment only
  (``BRAVE_API_KEY``), never from a config file or the agent; ``BRAVE_SEARCH_BASE_URL`` (or the
  ``base_url`` option) points it elsewhere, which the tests use to talk to this package's local
  server speaking the same API (:mod:`autorl_task_deepsearchqa.brave_server`).

Every backend follows ``autorl.protocols.SearchBackend``: ``search(query, k)`` returns at most
``k`` plain dicts ``{"title", "snippet", "url"}``.
"""

from __future__ import annotations

import html
import os
import re
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from autorl.errors import AutorlError, ConfigError
from autorl_task_deepsearchqa.bm25 import BM25Index, snippet
from autorl_task_deepsearchqa.corpus import load_documents

PACKAGE_DIR = Path(__file__).resolve().parent
SHIPPED_CORPUS = PACKAGE_DIR / "data" / "corpus.json"
BRAVE_URL = "https://api.search.brave.com"
BRAVE_PATH = "/res/v1/web/search"
BRAVE_KEY_ENV = "BRAVE_API_KEY"
BRAVE_URL_ENV = "BRAVE_SEARCH_BASE_URL"
_TAG_RE = re.compile(r"<[^>]+>")


class SearchError(AutorlError):
    """A search backend could not answer (after its retries)."""


@lru_cache(maxsize=4)
def shared_index(corpus_path: str) -> BM25Index:
    """One index per corpus file per process: every env slot of an evaluation shares it."""
    path = Path(corpus_path)
    if not path.is_file():
        raise ConfigError(
            f"deepsearchqa: search corpus {path} does not exist",
            hint="corpus_path must be a JSON list of {id, title, text} documents",
        )
    return BM25Index(load_documents(path))


class Bm25SearchBackend:
    """Offline BM25 search over an encyclopedia file (the shipped one by default)."""

    name = "bm25"

    def __init__(self, corpus_path: str | os.PathLike[str] | None = None) -> None:
        self.corpus_path = Path(corpus_path or SHIPPED_CORPUS).resolve()
        self.index = shared_index(str(self.corpus_path))

    def search(self, query: str, k: int) -> list[dict[str, str]]:
        return self.index.search(query, k)


class BraveSearchBackend:
    """Web search through the Brave Search API (online use; needs ``BRAVE_API_KEY``)."""

    name = "brave"

    def __init__(
        self,
        base_url: str | None = None,
        timeout_s: float = 20.0,
        max_attempts: int = 3,
        country: str | None = None,
    ) -> None:
        key = os.environ.get(BRAVE_KEY_ENV, "").strip()
        if not key:
            raise ConfigError(
                f"deepsearchqa: the brave search backend needs {BRAVE_KEY_ENV} in the harness "
                "environment",
                hint=f"export {BRAVE_KEY_ENV}=... (never put it in a config file), use "
                "search_backend = 'bm25' for offline runs, or replay a recorded evaluation",
            )
        if max_attempts < 1 or timeout_s <= 0:
            raise ConfigError(
                f"deepsearchqa: brave options max_attempts={max_attempts!r}, "
                f"timeout_s={timeout_s!r} must be positive"
            )
        import httpx

        self.base_url = (base_url or os.environ.get(BRAVE_URL_ENV) or BRAVE_URL).rstrip("/")
        self.max_attempts = max_attempts
        self.country = country
        self._client = httpx.Client(
            base_url=self.base_url,
            timeout=timeout_s,
            headers={"Accept": "application/json", "X-Subscription-Token": key},
        )
        self._lock = threading.Lock()

    def search(self, query: str, k: int) -> list[dict[str, str]]:
        import httpx

        params: dict[str, Any] = {"q": query, "count": max(1, min(k, 20))}
        if self.country:
            params["country"] = self.country
        last = ""
        for attempt in range(1, self.max_attempts + 1):
            try:
                with self._lock:
                    response = self._client.get(BRAVE_PATH, params=params)
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code == 200:
                    return self._hits(response.json(), k)
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in (408, 429) and response.status_code < 500:
                    break
            if attempt < self.max_attempts:
                time.sleep(min(8.0, 0.5 * 2 ** (attempt - 1)))
        raise SearchError(
            f"deepsearchqa: brave search failed for {query!r} at {self.base_url}: {last}",
            hint=f"check {BRAVE_KEY_ENV} and the network; a recorded evaluation replays offline "
            "(task option replay)",
        )

    @staticmethod
    def _hits(payload: dict[str, Any], k: int) -> list[dict[str, str]]:
        results = (payload.get("web") or {}).get("results") or []
        hits = []
        for row in results[:k]:
            text = html.unescape(_TAG_RE.sub("", str(row.get("description", ""))))
            hits.append(
                {
                    "title": html.unescape(_TAG_RE.sub("", str(row.get("title", "")))),
                    "snippet": snippet(text),
                    "url": str(row.get("url", "")),
                }
            )
        return hits

    def close(self) -> None:
        self._client.close()
