"""The judge cache: judge answers on disk, keyed by (judge model, prompt hash).

Re-scoring the same outputs (the baseline on a second run, a resubmission, a re-run after a
failure) makes no judge call for what was already judged. One JSON-lines file per judge under the
cache directory, appended as answers arrive, so a run that dies mid-way keeps every judgment it
paid for.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

from autorl_llm.drivers import ChatRequest

from autorl.digest import json_digest, short


def prompt_key(judge: str, request: ChatRequest) -> str:
    """SHA-256 of the judge name and the request (messages, system, max_tokens, temperature)."""
    payload = {"judge": judge, "request": request.to_dict(with_metadata=False)}
    return short(json_digest(payload), 64)


def _slug(judge: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", judge)[:60]
    return f"{readable}-{hashlib.sha256(judge.encode()).hexdigest()[:8]}"


class JudgeCache:
    """``get(key)`` / ``put(key, record)`` over ``<dir>/<judge>.jsonl``; thread-safe."""

    def __init__(self, directory: Path, judge: str) -> None:
        self.path = Path(directory) / f"{_slug(judge)}.jsonl"
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                    self._records[record["key"]] = record
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a line cut by a crash: that judgment is simply redone

    def __len__(self) -> int:
        return len(self._records)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._records.get(key)

    def put(self, key: str, record: dict[str, Any]) -> None:
        entry = {"key": key, **record}
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
            self._records[key] = entry


class NoCache:
    """``cache = false``: every judgment is a call."""

    path = None

    def __len__(self) -> int:
        return 0

    def get(self, key: str) -> None:
        return None

    def put(self, key: str, record: dict[str, Any]) -> None:
        return None
