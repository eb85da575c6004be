"""A run's end is written whole even when the signal to stop arrives while it is written (a
campaign stopping just after a run recorded ``completed``): the signal takes effect after."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from autorl_runner.finish import signals_deferred
from autorl_runner.run import terminate_as_interrupt


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT as a run's process has it (KeyboardInterrupt), whatever the test process has
    installed (under xdist it once did not raise here: not traced which handler was in place)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_waits_for_the_end_to_be_written(signum: int, ctrl_c_raises: None) -> None:
    written = []
    before = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)}
    with terminate_as_interrupt(), pytest.raises(KeyboardInterrupt):
        inside = signal.getsignal(signal.SIGTERM)
        with signals_deferred():
            os.kill(os.getpid(), signum)
            written.append("run.json")  # the signal did not cut this short
            written.append("contributions")
        written.append("never: the deferred signal interrupts here")
    assert written == ["run.json", "contributions"]
    assert inside is not before[signal.SIGTERM]  # the run's own handler was the one restored
    assert {n: signal.getsignal(n) for n in before} == before


def test_without_a_signal_the_handlers_come_back_untouched() -> None:
    with terminate_as_interrupt():
        handlers = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)}
        with signals_deferred():
            assert signal.getsignal(signal.SIGTERM) is not handlers[signal.SIGTERM]
        assert {n: signal.getsignal(n) for n in handlers} == handlers


def test_a_base_model_that_cannot_be_hashed_at_the_end_is_said_unchecked(tmp_path) -> None:
    """The harness out of descriptors when the run ends (an agent's socket flood): the base
    model's integrity check cannot read the files. The run still ends, its ``run.json`` says
    the base went unchecked, the events say why, and nothing claims it was modified."""
    import errno
    import json
    from types import SimpleNamespace

    from autorl_runner.console import RunConsole
    from autorl_runner.finish import finish
    from autorl_runner.records_io import EventLog

    from autorl.registry import Registry

    def files_hash(path):
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), str(path))

    setup = SimpleNamespace(
        grader=SimpleNamespace(files_hash=files_hash),
        model_info=SimpleNamespace(path=tmp_path / "base"),
        base_tree_hash="sha256:base",
    )
    info = {"status": "completed"}
    events = EventLog(tmp_path / "events.jsonl")
    finish(tmp_path, "r", info, [], Registry.empty(), setup, events, RunConsole(quiet=True))  # type: ignore[arg-type]
    written = json.loads((tmp_path / "run.json").read_text())
    assert written["integrity"] == {"base_model_checked": False}
    logged = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    warned = [e for e in logged if e["event"] == "base_model_unchecked"]
    assert warned and warned[0]["error"] == os.strerror(errno.EMFILE)
    assert "base_model_modified" not in {e["event"] for e in logged}
    assert logged[-1]["event"] == "run_end"
