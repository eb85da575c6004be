"""The budget clock warns once at 50 % and once at 90 %."""

from __future__ import annotations

import time

from autorl_runner.budget import BudgetClock


def test_warnings_fire_once_each_and_expiry() -> None:
    clock = BudgetClock(0.4)
    assert not clock.expired() and clock.elapsed() == 0.0
    clock.start()
    assert clock.due_warnings() == []
    time.sleep(0.22)
    first = clock.due_warnings()
    assert len(first) == 1 and first[0].startswith("50%")
    assert clock.due_warnings() == []
    time.sleep(0.2)
    assert [w[:3] for w in clock.due_warnings()] == ["90%"]
    assert clock.expired() and clock.remaining() == 0.0
    assert len(clock.warnings) == 2
    clock.stop()
    frozen = clock.elapsed()
    time.sleep(0.05)
    assert clock.elapsed() == frozen
