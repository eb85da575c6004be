"""Cassettes: record any driver's calls to a file, replay them offline.

A cassette is a JSON-lines file; each line holds a request, the driver that answered it and the
response, under a stable key (:func:`autorl_llm.drivers.types.request_key` of backend, model and
request, metadata excluded). Identical requests recorded several times replay in recording order,
then the last answer repeats. Replaying an unknown request is a :class:`CassetteMissError` naming
the cassette and the request's key: tests and offline runs never reach a provider by accident.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autorl_llm.drivers.base import ChatMixin
from autorl_llm.drivers.errors import CassetteMissError, DriverConfigError
from autorl_llm.drivers.types import ChatChunk, ChatRequest, ChatResponse, request_key

MODES = ("record", "replay", "auto")


class Cassette:
    """The recorded (key -> responses) of one file; appends are written at once."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._answers: dict[str, list[ChatResponse]] = defaultdict(list)
        self._served: dict[str, int] = defaultdict(int)
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        for n, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                response = ChatResponse.from_dict(entry["response"])
                self._answers[entry["key"]].append(response)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise DriverConfigError(
                    f"cassette {self.path}:{n}: unreadable entry ({exc!r})",
                    hint="cassettes are written by RecordingDriver; delete the line or re-record",
                ) from exc

    def __len__(self) -> int:
        return sum(len(v) for v in self._answers.values())

    def __contains__(self, key: str) -> bool:
        return key in self._answers

    def next_answer(self, key: str) -> ChatResponse | None:
        """The next recorded answer for ``key`` (the last one repeats), or None."""
        with self._lock:
            answers = self._answers.get(key)
            if not answers:
                return None
            i = min(self._served[key], len(answers) - 1)
            self._served[key] += 1
            return answers[i]

    def record(self, backend: str, model: str, request: ChatRequest, response: ChatResponse) -> str:
        key = request_key(backend, model, request)
        entry = {
            "key": key,
            "driver": f"{backend}/{model}",
            "request": request.to_dict(),
            "response": response.to_dict(),
        }
        line = json.dumps(entry, ensure_ascii=False, default=str)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
            self._answers[key].append(response)
            self._served[key] += 1
        return key


def _as_cassette(cassette: Cassette | str | Path) -> Cassette:
    return cassette if isinstance(cassette, Cassette) else Cassette(cassette)


class RecordingDriver(ChatMixin):
    """Pass every call through to ``inner`` and append request and answer to the cassette."""

    def __init__(self, inner: Any, cassette: Cassette | str | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.cassette = _as_cassette(cassette)

    def chat(self, request: ChatRequest) -> ChatResponse:
        response = self.inner.chat(request)
        self.cassette.record(self.name, self.model, request, response)
        return response

    def stream(self, request: ChatRequest) -> Iterator[ChatChunk]:
        for chunk in self.inner.stream(request):
            if chunk.response is not None:
                self.cassette.record(self.name, self.model, request, chunk.response)
            yield chunk


class ReplayingDriver(ChatMixin):
    """Answer from the cassette only; with ``fallback`` (a live driver), record the misses."""

    def __init__(
        self,
        cassette: Cassette | str | Path,
        backend: str,
        model: str,
        *,
        fallback: Any | None = None,
    ) -> None:
        self.cassette = _as_cassette(cassette)
        if fallback is None and not self.cassette.path.exists():
            raise DriverConfigError(
                f"cassette {self.cassette.path} does not exist (replay of {backend}/{model})",
                hint="record it first (cassette mode 'record' or 'auto'), or fix the path",
            )
        self.name = backend
        self.model = model
        self.fallback = fallback

    def _miss(self, request: ChatRequest, key: str) -> CassetteMissError:
        last = " ".join(request.last_user_text().split())
        last = last if len(last) <= 80 else last[:77] + "..."
        return CassetteMissError(
            f"cassette {self.cassette.path} has no answer for {self.name}/{self.model} request "
            f"{key} (last user message: {last!r}; the cassette holds {len(self.cassette)} "
            "answers)",
            hint="re-record with cassette mode 'record' or 'auto' (needs the provider), or make "
            "the request identical to the recorded one (messages, system, tools, max_tokens, "
            "temperature, stop)",
        )

    def chat(self, request: ChatRequest) -> ChatResponse:
        key = request_key(self.name, self.model, request)
        answer = self.cassette.next_answer(key)
        if answer is not None:
            return answer.with_(replayed=True)
        if self.fallback is None:
            raise self._miss(request, key)
        response = self.fallback.chat(request)
        self.cassette.record(self.name, self.model, request, response)
        return response
