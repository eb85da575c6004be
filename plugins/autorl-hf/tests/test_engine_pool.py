"""engine.pool's policy, without starting an engine (the real reuse is in test_engine.py):
one idle engine at a time, taken only by the same key, stopped when another is asked for, when
its idle time is up, or at once with ``$AUTORL_ENGINE_IDLE_S=0``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from autorl_hf.engine import pool


class Process:
    """Stands in for an engine process: the pool only asks whether it runs and stops it."""

    def __init__(self) -> None:
        self.running = True

    def alive(self) -> bool:
        return self.running

    def close(self) -> None:
        self.running = False


@pytest.fixture(autouse=True)
def empty_pool() -> Iterator[None]:
    pool.close_idle()
    yield
    pool.close_idle()


def test_the_same_key_takes_the_idle_engine_another_stops_it() -> None:
    engine = Process()
    pool.give(("a",), engine)
    assert engine.running and pool.take(("a",)) is engine
    assert pool.take(("a",)) is None  # taken: no longer idle
    pool.give(("a",), engine)
    assert pool.take(("b",)) is None and not engine.running  # stopped before another starts


def test_a_second_engine_handed_back_stops_the_first() -> None:
    first, second = Process(), Process()
    pool.give(("a",), first)
    pool.give(("b",), second)
    assert not first.running and second.running
    assert pool.take(("b",)) is second


def test_idle_time_runs_out_and_zero_keeps_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(pool.IDLE_ENV, "0.2")
    engine = Process()
    pool.give(("a",), engine)
    deadline = time.monotonic() + 5
    while engine.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not engine.running and pool.take(("a",)) is None
    monkeypatch.setenv(pool.IDLE_ENV, "0")
    engine = Process()
    pool.give(("a",), engine)
    assert not engine.running


def test_a_dead_engine_is_never_handed_out() -> None:
    engine = Process()
    pool.give(("a",), engine)
    engine.running = False  # it died while idle
    assert pool.take(("a",)) is None


def test_the_key_changes_when_a_file_of_the_model_changes(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"x" * 8)
    before = pool.model_key(tmp_path, "fp32", tmp_path)
    assert pool.model_key(tmp_path, "fp32", tmp_path) == before
    assert pool.model_key(tmp_path, "bf16", tmp_path) != before
    (tmp_path / "model.safetensors").write_bytes(b"y" * 9)
    assert pool.model_key(tmp_path, "fp32", tmp_path) != before
