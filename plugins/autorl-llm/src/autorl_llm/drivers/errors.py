"""Errors of driver backends: each names the driver, what failed and how to fix it."""

from __future__ import annotations

from autorl.errors import AutorlError


class DriverError(AutorlError):
    """A driver call failed for a reason the caller cannot fix by retrying."""


class DriverConfigError(DriverError):
    """A driver option, script file or environment variable is missing or invalid."""


class DriverRequestError(DriverError):
    """A chat request is malformed (bad role, empty messages, unsupported parameter)."""


class DriverAPIError(DriverError):
    """The provider answered with a non-retryable HTTP error (400, 401, 404...)."""

    def __init__(self, message: str, hint: str | None = None, *, status: int | None = None):
        super().__init__(message, hint)
        self.status = status


class DriverUnavailableError(DriverError):
    """Retries are exhausted: the provider kept rate-limiting, failing or refusing connections."""

    attempts: int = 1
    """Attempts made before giving up (set by the retry policy)."""


class DriverTimeoutError(DriverUnavailableError):
    """No answer within the per-request timeout, on every attempt."""


class CassetteMissError(DriverError):
    """Replay asked for a request that the cassette never recorded."""


def attempts_of(error: BaseException) -> int:
    """How many attempts a driver made before this error (1 when it does not say)."""
    attempts = getattr(error, "attempts", None)
    return attempts if isinstance(attempts, int) and attempts >= 1 else 1
