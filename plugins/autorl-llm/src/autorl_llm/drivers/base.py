"""What every backend shares: request building, the retry loop, timing and cost.

A backend subclasses :class:`BaseDriver` and implements :meth:`BaseDriver._send` (one attempt,
returning a response without latency or cost) and, when it can stream, :meth:`_send_stream`.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from autorl_llm.drivers.errors import DriverConfigError, DriverError
from autorl_llm.drivers.pricing import cost_usd, parse_prices
from autorl_llm.drivers.retry import RetryPolicy, TransientError
from autorl_llm.drivers.types import ChatChunk, ChatRequest, ChatResponse

RETRY_OPTIONS = frozenset(RetryPolicy.__dataclass_fields__)


class ChatMixin:
    """``complete(messages, **params)`` and a default ``stream`` on top of ``chat``."""

    name: str
    model: str

    @property
    def driver_name(self) -> str:
        return f"{self.name}/{self.model}"

    def chat(self, request: ChatRequest) -> ChatResponse:  # pragma: no cover - abstract
        raise NotImplementedError

    def complete(self, messages: Sequence[Mapping[str, Any]], **params: Any) -> ChatResponse:
        """Convenience: build a :class:`ChatRequest` from messages and parameters, then chat."""
        return self.chat(ChatRequest.from_messages(messages, **params))

    def stream(self, request: ChatRequest) -> Iterator[ChatChunk]:
        """Text pieces as they come; the last chunk holds the full response."""
        response = self.chat(request)
        if response.text:
            yield ChatChunk(text=response.text)
        yield ChatChunk(response=response)


class BaseDriver(ChatMixin):
    """A backend talking to one model; subclasses set ``name`` and implement ``_send``."""

    name = ""
    known_options: frozenset[str] = frozenset()
    """Backend-specific option names (besides the retry options and ``prices``)."""

    def __init__(self, model: str, **options: Any) -> None:
        where = f"driver {self.name}/{model}"
        if not isinstance(model, str) or not model.strip():
            raise DriverConfigError(
                f"driver {self.name!r}: empty model name",
                hint=f"name the driver as {self.name}/<model>",
            )
        unknown = sorted(set(options) - self.known_options - RETRY_OPTIONS - {"prices"})
        if unknown:
            allowed = sorted(self.known_options | RETRY_OPTIONS | {"prices"})
            close = [difflib.get_close_matches(u, allowed, n=1) for u in unknown]
            guesses = [
                repr(c[0]) if len(unknown) == 1 else f"{c[0]!r} for {u!r}"
                for u, c in zip(unknown, close, strict=True)
                if c
            ]
            raise DriverConfigError(
                f"{where}: unknown option(s) {', '.join(unknown)}"
                + (f" (did you mean {', '.join(guesses)}?)" if guesses else ""),
                hint=f"options of {self.name!r}: {', '.join(allowed)}",
            )
        self.model = model
        self.options = dict(options)
        self.policy = RetryPolicy.from_options(options, where)
        self.prices = parse_prices(options.get("prices"), where)

    # to implement ------------------------------------------------------------------------------

    def _send(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        """One attempt. Raise the SDK's / httpx's exception, or TransientError, on failure."""
        raise NotImplementedError

    def _send_stream(self, request: ChatRequest, timeout_s: float) -> Iterator[ChatChunk]:
        """One streamed attempt; by default the whole answer arrives as one piece."""
        response = self._send(request, timeout_s)
        if response.text:
            yield ChatChunk(text=response.text)
        yield ChatChunk(response=response)

    def _classify(self, exc: BaseException) -> Exception | None:
        """Backend-specific error mapping; None falls back to the shared duck-typed one."""
        return None

    def close(self) -> None:
        """Release what the driver started (a served model); the gateway calls it on stop."""

    # shared ------------------------------------------------------------------------------------

    def _finish(self, response: ChatResponse, started: float, attempts: int) -> ChatResponse:
        return response.with_(
            latency_s=round(time.monotonic() - started, 4),
            attempts=attempts,
            cost_usd=0.0
            if response.scripted
            else cost_usd(self.model, response.usage, self.prices),
        )

    def chat(self, request: ChatRequest) -> ChatResponse:
        if not isinstance(request, ChatRequest):
            raise DriverError(
                f"{self.driver_name}: chat() takes a ChatRequest, got {type(request).__name__}",
                hint="use complete(messages, **params) to pass plain messages",
            )
        started = time.monotonic()
        response, attempts = self.policy.run(
            lambda: self._send(request, self.policy.timeout_s),
            what=self.driver_name,
            classify=self._classify,
        )
        return self._finish(response, started, attempts)

    def stream(self, request: ChatRequest) -> Iterator[ChatChunk]:
        """Retries cover opening the stream (up to its first piece), never a half-sent answer."""
        started = time.monotonic()

        def open_stream() -> tuple[ChatChunk, Iterator[ChatChunk]]:
            chunks = self._send_stream(request, self.policy.timeout_s)
            try:
                return next(chunks), chunks
            except StopIteration:
                raise TransientError("server", "the stream ended before any data") from None

        (first, chunks), attempts = self.policy.run(
            open_stream, what=self.driver_name, classify=self._classify
        )
        for chunk in _chain(first, chunks, self):
            if chunk.response is not None:
                yield ChatChunk(
                    text=chunk.text, response=self._finish(chunk.response, started, attempts)
                )
            else:
                yield chunk


def _chain(first: ChatChunk, rest: Iterator[ChatChunk], driver: BaseDriver) -> Iterator[ChatChunk]:
    """Yield the stream, turning a failure after the first piece into a clear DriverError."""
    from autorl_llm.drivers.retry import classify_exception

    yield first
    try:
        yield from rest
    except DriverError:
        raise
    except Exception as exc:
        mapped = driver._classify(exc) or classify_exception(exc, driver.driver_name)
        if mapped is None:
            raise
        if isinstance(mapped, TransientError):
            raise DriverError(
                f"{driver.driver_name}: the stream broke after it started: {mapped.detail}",
                hint="streamed answers are not retried once text has been sent; retry the call",
            ) from exc
        raise mapped from exc
