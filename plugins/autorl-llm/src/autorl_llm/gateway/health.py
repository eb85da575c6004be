"""Upstream health: which driver calls failed or needed retries, and whether the upstream is down.

An outage must be visible. Without this, an agent whose model provider answers 500 for the
whole run ends as ``deadline`` (or exits 0), and the reason lives only in one column of the
call log. The gateway feeds every call's outcome here; the engine turns the first failure, each
retried or failed call and a recovery into events, and a run whose last upstream call failed
ends as ``driver_unavailable``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autorl_llm.drivers.errors import DriverAPIError, DriverRequestError, attempts_of

CLIENT_STATUSES = frozenset({400, 413, 422})
"""Upstream answers that reject the agent's request itself (too long, malformed): the upstream
is up, so these are the agent's errors, not an outage."""

MESSAGE_LIMIT = 500


def upstream_fault(error: BaseException) -> bool:
    """True when a failed call says the upstream (or its key, model or network) is unusable.

    Budget refusals and requests the upstream rejected as malformed are not outages.
    """
    from autorl_llm.gateway.service import BudgetRefused

    if isinstance(error, BudgetRefused | DriverRequestError):
        return False
    return not (isinstance(error, DriverAPIError) and error.status in CLIENT_STATUSES)


Notify = Callable[[str, dict[str, Any]], None]
"""``notify(event, fields)``: the engine logs each as an event (and prints the notable ones)."""


@dataclass
class UpstreamHealth:
    """Thread-safe outcome counters of the calls that reached the driver."""

    notify: Notify | None = None
    answered: int = 0
    failed: int = 0
    retried_calls: int = 0
    retries: int = 0
    """Extra attempts the driver's retry policy spent, over answered and failed calls."""
    consecutive_failures: int = 0
    last_error: str | None = None
    last_error_type: str | None = None
    last_error_at: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def succeeded(self, attempts: int, latency_s: float | None) -> None:
        with self._lock:
            self.answered += 1
            recovered_after = self.consecutive_failures
            self.consecutive_failures = 0
            if attempts > 1:
                self.retried_calls += 1
                self.retries += attempts - 1
        if attempts > 1:
            self._notify("driver_call_retried", {"attempts": attempts, "latency_s": latency_s})
        if recovered_after:
            self._notify("driver_recovered", {"after_failed_calls": recovered_after})

    def failed_call(self, error: BaseException, elapsed_s: float) -> None:
        if not upstream_fault(error):
            return
        attempts = attempts_of(error)
        message = str(error)[:MESSAGE_LIMIT]
        with self._lock:
            self.failed += 1
            self.consecutive_failures += 1
            if attempts > 1:
                self.retries += attempts - 1
            self.last_error, self.last_error_type = message, type(error).__name__
            self.last_error_at = time.time()
            consecutive = self.consecutive_failures
        self._notify(
            "driver_call_failed",
            {
                "error_type": type(error).__name__,
                "message": message,
                "attempts": attempts,
                "consecutive_failures": consecutive,
                "elapsed_s": round(elapsed_s, 3),
            },
        )

    @property
    def down(self) -> bool:
        """The upstream's last answer to a call was a failure (after the driver's retries)."""
        return self.consecutive_failures > 0

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "answered": self.answered,
                "failed": self.failed,
                "retried_calls": self.retried_calls,
                "retries": self.retries,
                "consecutive_failures": self.consecutive_failures,
                "down": self.consecutive_failures > 0,
                "last_error": self.last_error,
                "last_error_type": self.last_error_type,
            }

    def _notify(self, event: str, fields: dict[str, Any]) -> None:
        if self.notify is not None:
            self.notify(event, fields)
