"""Killing the processes a sandbox left behind, until none is left.

A forking straggler may spawn while we kill, so one pass is not enough: the sandboxes (and the
code evaluator's per-program confinement) find their leftovers again after each pass. psutil
is imported when a reap runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ROUNDS = 20


def kill_until_gone(find: Callable[[], list[Any]], settle: Callable[[list[Any]], object]) -> int:
    """SIGKILL what ``find()`` returns (psutil processes) until it returns none, at most
    :data:`ROUNDS` passes, calling ``settle(killed)`` after each pass. A process that is gone
    already, or not ours to kill, is skipped. Returns how many kills succeeded."""
    import psutil

    killed = 0
    for _ in range(ROUNDS):
        found = find()
        if not found:
            break
        for proc in found:
            try:
                proc.kill()
                killed += 1
            except psutil.Error:
                pass
        settle(found)
    return killed
