"""Searches recorded as they happen (query -> results), and replayed from a recording.

A recording is a JSON-lines file, one line per distinct ``(backend, query, k)``:
``{"backend", "query", "k", "results": [{"title", "snippet", "url"}]}``. An evaluation appends
every new search to ``<records_dir>/searches.jsonl``; the task option ``replay`` makes the
environment answer searches only from such a file, so a web-search score is reproduced offline.
A search missing from the recording is an error, never a silent live call.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from autorl.errors import AutorlError, ConfigError

SEARCHES_FILE = "searches.jsonl"


class SearchReplayMiss(AutorlError):
    """A replayed evaluation made a search the recording does not hold."""


def _key(backend: str, query: str, k: int) -> str:
    return json.dumps([backend, " ".join(query.split()), int(k)])


def _load(path: Path) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {}
    if not path.is_file():
        return found
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            found.setdefault(_key(row["backend"], row["query"], row["k"]), list(row["results"]))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"deepsearchqa: search recording {path}:{n} is unreadable ({exc!r})",
                hint="recordings are written by the environment; delete the line or re-record",
            ) from exc
    return found


class SearchRecorder:
    """Wrap a backend: answer through it, append each new (query, k) and its results."""

    _locks: dict[Path, threading.Lock] = {}

    def __init__(self, backend: Any, path: str | Path) -> None:
        self.backend = backend
        self.name = backend.name
        self.path = Path(path)
        self._lock = self._locks.setdefault(self.path.resolve(), threading.Lock())
        self._seen = set(_load(self.path))

    def search(self, query: str, k: int) -> list[dict[str, str]]:
        results = self.backend.search(query, k)
        key = _key(self.name, query, k)
        with self._lock:
            if key not in self._seen:
                self._seen.add(key)
                self.path.parent.mkdir(parents=True, exist_ok=True)
                row = {"backend": self.name, "query": query, "k": k, "results": results}
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        return results


class SearchReplay:
    """Answer searches from a recording only (no backend is built, no network)."""

    def __init__(self, path: str | Path, backend: str) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ConfigError(
                f"deepsearchqa: replay recording {self.path} does not exist",
                hint=f"point replay at the records directory of an evaluation (it holds "
                f"{SEARCHES_FILE})",
            )
        self.name = backend
        self._answers = _load(self.path)

    def search(self, query: str, k: int) -> list[dict[str, str]]:
        found = self._answers.get(_key(self.name, query, k))
        if found is None:
            raise SearchReplayMiss(
                f"deepsearchqa: {self.path} holds no {self.name} search for {query!r} (k={k}); "
                f"it holds {len(self._answers)} searches",
                hint="replay with the same model, search_backend and top_k as the recording, "
                "or record again",
            )
        return found
