"""The driver-call log: one JSON line per call (request, response, tokens, latency, cost).

It is harness-side (outside the agent's workspace) and append-only, so reports can sum tokens
and cost and say which answers were scripted or replayed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autorl.jsonl import json_lines
from autorl_llm.drivers.base import ChatMixin
from autorl_llm.drivers.errors import DriverConfigError, attempts_of
from autorl_llm.drivers.types import ChatChunk, ChatRequest, ChatResponse, request_key


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


MAX_RECORD_BYTES = 1024**2
"""A logged call is at most this long: the gateway takes bodies up to 8 MiB, and the readers
(reports, the analysis) read a bounded log, so one huge request must not push other calls out."""
KEEP_CHARS = 16_384
"""Characters kept of each long string of an oversized record (its start)."""


def _cut(value: Any, keep: int) -> Any:
    if isinstance(value, str) and len(value) > keep:
        return value[:keep] + f"... [{len(value) - keep} characters not logged]"
    if isinstance(value, dict):
        return {k: _cut(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v, keep) for v in value]
    return value


def bounded_line(record: dict[str, Any], limit: int = MAX_RECORD_BYTES) -> str:
    """The record as one JSON line of at most ``limit`` bytes: long strings are cut (their
    start kept) and the record says how large it was (``truncated_from_bytes``)."""
    line = json.dumps(record, ensure_ascii=False, default=str)
    size = len(line.encode("utf-8"))
    keep = KEEP_CHARS
    while len(line.encode("utf-8")) > limit and keep >= 16:
        cut = _cut(record, keep)
        cut["truncated_from_bytes"] = size
        line = json.dumps(cut, ensure_ascii=False, default=str)
        keep //= 4
    if len(line.encode("utf-8")) > limit:  # countless short strings: keep only the summary
        summary = {k: record.get(k) for k in ("ts", "driver", "key", "streamed", "usage")}
        line = json.dumps({**summary, "truncated_from_bytes": size}, default=str)
    return line


class DriverCallLog:
    """Append-only JSON-lines file, safe to share between threads of one process; each record
    is bounded (:func:`bounded_line`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = bounded_line(record)
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def log_call(
        self,
        *,
        backend: str,
        model: str,
        request: ChatRequest,
        response: ChatResponse | None = None,
        error: BaseException | None = None,
        streamed: bool = False,
        elapsed_s: float | None = None,
        refused: bool = False,
    ) -> dict[str, Any]:
        """One record; ``refused`` marks a call the gateway never sent (the budget was spent)."""
        record: dict[str, Any] = {
            "ts": _now(),
            "driver": f"{backend}/{model}",
            "key": request_key(backend, model, request),
            "streamed": streamed,
            "request": request.to_dict(),
        }
        if response is not None:
            record.update(
                response=response.to_dict(with_raw=False),
                usage=response.usage.to_dict(),
                latency_s=response.latency_s,
                cost_usd=response.cost_usd,
                attempts=response.attempts,
                scripted=response.scripted,
                replayed=response.replayed,
            )
        if error is not None:
            record.update(
                error={"type": type(error).__name__, "message": str(error)},
                attempts=0 if refused else attempts_of(error),
                latency_s=round(elapsed_s or 0.0, 4),
                usage={"input_tokens": 0, "output_tokens": 0},
                cost_usd=0.0,
                scripted=backend == "scripted",
            )
            if refused:
                record["refused"] = True
        self.write(record)
        return record

    @staticmethod
    def read(path: str | Path) -> list[dict[str, Any]]:
        """All records of a log; a corrupt line is an error naming the file and line."""
        return [record for _, record in json_lines(path, DriverConfigError)]

    @staticmethod
    def totals(path: str | Path) -> dict[str, Any]:
        """Calls, errors, tokens and cost summed over a log (what reports show).

        ``calls`` counts answered calls, as the gateway's budget does; calls that failed and
        calls refused for a spent budget are counted apart.
        """
        records = DriverCallLog.read(path)
        ok = [r for r in records if "error" not in r]
        refused = sum(1 for r in records if r.get("refused"))
        return {
            "calls": len(ok),
            "errors": len(records) - len(ok) - refused,
            "refused": refused,
            "retries": sum(max(0, int(r.get("attempts") or 1) - 1) for r in records),
            "input_tokens": sum(r["usage"]["input_tokens"] for r in ok),
            "output_tokens": sum(r["usage"]["output_tokens"] for r in ok),
            "cost_usd": round(sum(r.get("cost_usd", 0.0) for r in ok), 6),
            "scripted": any(r.get("scripted") for r in records),
            "replayed": sum(1 for r in ok if r.get("replayed")),
        }


class LoggingDriver(ChatMixin):
    """Wrap any driver so each call (or failure) lands in a :class:`DriverCallLog`."""

    def __init__(self, inner: Any, log: DriverCallLog | str | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.log = log if isinstance(log, DriverCallLog) else DriverCallLog(log)

    def _failed(self, request: ChatRequest, exc: Exception, started: float, **extra: Any) -> None:
        """Log a call that raised, with the seconds it took."""
        elapsed = time.monotonic() - started
        self.log.log_call(
            backend=self.name,
            model=self.model,
            request=request,
            error=exc,
            elapsed_s=elapsed,
            **extra,
        )

    def chat(self, request: ChatRequest) -> ChatResponse:
        started = time.monotonic()
        try:
            response = self.inner.chat(request)
        except Exception as exc:
            self._failed(request, exc, started)
            raise
        self.log.log_call(backend=self.name, model=self.model, request=request, response=response)
        return response

    def stream(self, request: ChatRequest) -> Iterator[ChatChunk]:
        started = time.monotonic()
        try:
            for chunk in self.inner.stream(request):
                if chunk.response is not None:
                    self.log.log_call(
                        backend=self.name,
                        model=self.model,
                        request=request,
                        response=chunk.response,
                        streamed=True,
                    )
                yield chunk
        except Exception as exc:
            self._failed(request, exc, started, streamed=True)
            raise
