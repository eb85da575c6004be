"""The budget clock, its warnings (at 50 % and 90 % of the wall-clock budget), the time it
gives back when evaluation is not charged to the agent, and the other meters ``/budget`` shows."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

WARN_AT = (0.5, 0.9)


class BudgetClock:
    """Monotonic clock of the agent phase; ``elapsed`` is 0 until ``start``."""

    def __init__(self, wall_seconds: float) -> None:
        self.wall_seconds = wall_seconds
        self.credited = 0.0
        """Seconds given back (evaluations, when the run's policy excludes them)."""
        self.meters: dict[str, Callable[[], dict[str, Any]]] = {}
        """Other budgets' readings (GPU-hours), merged into ``usage()``."""
        self._start: float | None = None
        self._stopped: float | None = None
        self._warnings: list[str] = []
        self._warned: set[float] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        self._start = time.monotonic()

    def stop(self) -> None:
        if self._stopped is None:
            self._stopped = time.monotonic()

    def elapsed(self) -> float:
        if self._start is None:
            return 0.0
        return (self._stopped or time.monotonic()) - self._start

    def remaining(self) -> float:
        return max(0.0, self.wall_seconds + self.credited - self.elapsed())

    def expired(self) -> bool:
        return self._start is not None and self.elapsed() >= self.wall_seconds + self.credited

    def credit(self, seconds: float) -> None:
        """Move the deadline back by ``seconds`` while the agent runs (never after it stopped)."""
        with self._lock:
            if self._start is not None and self._stopped is None and seconds > 0:
                self.credited += seconds

    def excluding(
        self, evaluate: Callable[..., T], limit: Callable[[], float] | None = None
    ) -> Callable[..., T]:
        """``evaluate`` with its duration given back to the agent (``evaluation_time =
        "excluded"``): only what is really evaluated counts (a duplicate never reaches it), and
        evaluations run one at a time, so nothing is counted twice. ``limit()`` (the
        evaluation's deadline) caps what one evaluation gives back: a checkpoint that makes
        its evaluation slow never buys its agent more time than that."""

        def timed(*args: Any, **kwargs: Any) -> T:
            began = time.monotonic()
            try:
                return evaluate(*args, **kwargs)
            finally:
                spent = time.monotonic() - began
                self.credit(spent if limit is None else min(spent, limit()))

        return timed

    def usage(self) -> dict[str, Any]:
        """Every meter's reading, for ``/budget`` and the records."""
        out: dict[str, Any] = {}
        for read in self.meters.values():
            out.update(read())
        return out

    def due_warnings(self) -> list[str]:
        """Warnings newly due (each threshold once); they are also kept for ``warnings``."""
        fraction = self.elapsed() / (self.wall_seconds + self.credited)
        new = []
        with self._lock:
            for threshold in WARN_AT:
                if fraction >= threshold and threshold not in self._warned:
                    self._warned.add(threshold)
                    message = (
                        f"{int(threshold * 100)}% of the time budget used: "
                        f"{self.remaining():.0f} s left"
                    )
                    self._warnings.append(message)
                    new.append(message)
        return new

    @property
    def warnings(self) -> list[str]:
        with self._lock:
            return list(self._warnings)
