"""One retry policy for every backend: exponential backoff with jitter, honouring Retry-After.

Backends turn the SDKs' own retries off and let this policy decide, so every provider behaves
the same way and every retry is visible (attempt counts land in responses and the call log).
The loop itself is tenacity's; this module says *what* is retried and *how long* to wait.
Errors are classified by duck typing (``status_code``, ``response.headers``, class names), so this
module imports no SDK.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import tenacity

from autorl_llm.drivers.errors import (
    DriverAPIError,
    DriverConfigError,
    DriverError,
    DriverTimeoutError,
    DriverUnavailableError,
)

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


class TransientError(Exception):
    """A failure worth retrying: rate limit, server error, dropped connection or timeout."""

    def __init__(
        self, kind: str, detail: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.status = status
        self.retry_after = retry_after


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    if "retry-after-ms" in lower:
        try:
            return max(0.0, float(lower["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _status_hint(status: int) -> str | None:
    if status in (401, 403):
        return "check the API key variable and that the key may use this model"
    if status == 404:
        return "check the model name (the part after '<backend>/') and the base URL"
    if status == 400:
        return "the provider rejected the request: see its message above"
    return None


def classify_status(
    status: int, headers: Mapping[str, str] | None, body: str, what: str
) -> Exception:
    """A TransientError for retryable statuses, a DriverAPIError for the others."""
    excerpt = " ".join(body.split())[:300]
    if status in RETRYABLE_STATUS or status >= 500:
        kind = "rate_limit" if status == 429 else "server"
        return TransientError(
            kind, f"HTTP {status}: {excerpt}", status=status, retry_after=parse_retry_after(headers)
        )
    return DriverAPIError(
        f"{what}: the provider answered HTTP {status}: {excerpt}",
        hint=_status_hint(status),
        status=status,
    )


def classify_exception(exc: BaseException, what: str) -> Exception | None:
    """Map an httpx or SDK exception to TransientError / DriverAPIError; None if unknown."""
    if isinstance(exc, (TransientError, DriverError)):
        return exc
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & {"TimeoutException", "APITimeoutError", "TimeoutError", "ReadTimeout"}:
        return TransientError("timeout", f"timed out ({type(exc).__name__})")
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    if status is None and response is not None:
        status = getattr(response, "status_code", None)
    if isinstance(status, int):
        headers = getattr(response, "headers", None)
        try:
            body = response.text if response is not None else str(exc)
        except Exception:
            body = str(exc)
        return classify_status(status, headers, body or str(exc), what)
    if names & {"TransportError", "APIConnectionError", "ConnectionError", "RemoteProtocolError"}:
        return TransientError("connection", f"connection failed: {exc}")
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry; ``timeout_s`` bounds each attempt."""

    max_attempts: int = 4
    initial_delay_s: float = 1.0
    multiplier: float = 2.0
    max_delay_s: float = 30.0
    jitter: float = 0.25
    """Each delay is scaled by a random factor in [1 - jitter, 1 + jitter]."""
    timeout_s: float = 120.0
    retry_on_timeout: bool = True
    max_retry_after_s: float = 120.0
    """A provider's Retry-After above this is capped (a run's budget is finite)."""

    def __post_init__(self) -> None:
        problems = []
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            problems.append(f"max_attempts={self.max_attempts!r} (need an int >= 1)")
        if self.timeout_s <= 0:
            problems.append(f"timeout_s={self.timeout_s!r} (need > 0)")
        if self.initial_delay_s < 0 or self.max_delay_s < 0 or self.multiplier < 1:
            problems.append("delays must be >= 0 and multiplier >= 1")
        if not 0 <= self.jitter <= 1:
            problems.append(f"jitter={self.jitter!r} (need 0..1)")
        if problems:
            raise DriverConfigError("invalid retry policy: " + "; ".join(problems))

    @classmethod
    def from_options(cls, options: Mapping[str, Any], where: str) -> RetryPolicy:
        """Build from driver options (``max_attempts``, ``timeout_s``, ``initial_delay_s``...)."""
        fields = {f for f in cls.__dataclass_fields__}
        picked = {k: v for k, v in options.items() if k in fields}
        try:
            return cls(**picked)
        except DriverConfigError as exc:
            raise DriverConfigError(f"{where}: {exc.message}") from exc
        except TypeError as exc:
            raise DriverConfigError(f"{where}: invalid retry option: {exc}") from exc

    def delay(self, attempt: int, retry_after: float | None = None, rng: Any = random) -> float:
        """Seconds to sleep after failed ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s)
        base = min(self.initial_delay_s * self.multiplier ** (attempt - 1), self.max_delay_s)
        return base * (1 + self.jitter * (2 * rng.random() - 1))

    def run(
        self,
        call: Callable[[], T],
        *,
        what: str,
        classify: Callable[[BaseException], Exception | None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        on_retry: Callable[[int, TransientError, float], None] | None = None,
    ) -> tuple[T, int]:
        """Call ``call`` until it succeeds; return (result, attempts used).

        Raises DriverTimeoutError / DriverUnavailableError once attempts are spent, and
        DriverAPIError at once for errors no retry can fix.
        """

        def attempt() -> T:
            try:
                return call()
            except Exception as exc:
                mapped = (classify(exc) if classify else None) or classify_exception(exc, what)
                if mapped is None or mapped is exc:
                    raise
                raise mapped from exc

        def retryable(exc: BaseException) -> bool:
            timeout = getattr(exc, "kind", None) == "timeout"
            return isinstance(exc, TransientError) and (self.retry_on_timeout or not timeout)

        # tenacity calls ``wait`` and ``before_sleep`` only after a retryable TransientError
        def wait(state: Any) -> float:
            return self.delay(state.attempt_number, state.outcome.exception().retry_after)

        def notify(state: Any) -> None:
            if on_retry:
                error, pause = state.outcome.exception(), state.next_action.sleep
                on_retry(state.attempt_number, error, pause)

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_attempts),
            wait=wait,
            retry=tenacity.retry_if_exception(retryable),
            sleep=sleep,
            before_sleep=notify,
            reraise=True,
        )
        try:
            result = retrying(attempt)
        except TransientError as last:
            self._give_up(last, retrying.statistics["attempt_number"], what)
        return result, retrying.statistics["attempt_number"]

    def _give_up(self, last: TransientError, attempt: int, what: str) -> NoReturn:
        attempts = f"{attempt} attempt{'s' if attempt > 1 else ''}"
        error: DriverUnavailableError
        if last.kind == "timeout":
            error = DriverTimeoutError(
                f"{what}: no answer within {self.timeout_s:g} s ({attempts})",
                hint="raise the driver option timeout_s, or check that the provider is reachable",
            )
        else:
            error = DriverUnavailableError(
                f"{what}: gave up after {attempts}; last error: {last.detail}",
                hint="the provider kept failing: retry later, or raise max_attempts",
            )
        error.attempts = attempt  # the call log and the gateway's health count retries
        raise error from last
