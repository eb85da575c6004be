"""Rate-limited logs for the loopback services: a flood of identical errors costs a few lines.

The logger keeps the name ``autorl.serving`` (the harness's ``autorl.*`` log tree, beside
``autorl.grading`` and ``autorl.gateway``), whichever distribution the code lives in.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

log = logging.getLogger("autorl.serving")


class RepeatFilter(logging.Filter):
    """Lets the first ``burst`` records of one kind (logger, level, message template, exception
    type) through per ``window`` seconds and drops the rest; the next one let through says how
    many were dropped. A flood of identical errors costs a few lines, not gigabytes."""

    def __init__(self, burst: int = 5, window: float = 60.0, max_kinds: int = 1000) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.max_kinds = max_kinds
        self._seen: dict[tuple[Any, ...], list[float]] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        template = record.msg if isinstance(record.msg, str) else type(record.msg).__name__
        kind = record.exc_info[0] if record.exc_info else None
        key = (record.name, record.levelno, template[:200], kind)
        now = time.monotonic()
        with self._lock:
            state = self._seen.get(key)  # [window start, records this window, dropped]
            if state is None or now - state[0] >= self.window:
                dropped = int(state[2]) if state else 0
                if state is None and len(self._seen) >= self.max_kinds:
                    self._seen.clear()
                self._seen[key] = [now, 1, 0]
                if dropped:
                    record.msg = (
                        f"{record.getMessage()} ({dropped} more like this were not logged in "
                        f"the last {self.window:.0f} s)"
                    )
                    record.args = None
                return True
            state[1] += 1
            if state[1] <= self.burst:
                return True
            state[2] += 1
            return False


REPEAT_FILTER = RepeatFilter()
LIMITED_LOGGERS = (
    "autorl.serving",
    "autorl.grading",
    "autorl.gateway",
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
    "asyncio",
)


def install_log_limits() -> None:
    """Rate-limit the loggers the servers write to (idempotent)."""
    for name in LIMITED_LOGGERS:
        logger = logging.getLogger(name)
        if REPEAT_FILTER not in logger.filters:
            logger.addFilter(REPEAT_FILTER)
