"""Record any driver to a cassette, replay offline; the call log; open_driver wiring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autorl_llm.drivers import (
    Cassette,
    ChatRequest,
    DriverCallLog,
    LoggingDriver,
    RecordingDriver,
    ReplayingDriver,
    open_driver,
    request_key,
)
from autorl_llm.drivers.errors import CassetteMissError, DriverConfigError, DriverUnavailableError

from autorl.registry import Registry

from .echo_driver import EchoDriver


def ask(text: str) -> ChatRequest:
    return ChatRequest.from_messages([{"role": "user", "content": text}], metadata={"who": "test"})


def test_record_then_replay_in_order_then_last_repeats(tmp_path: Path) -> None:
    tape = tmp_path / "tape.jsonl"
    live = EchoDriver("m1")
    rec = RecordingDriver(live, tape)
    first = [rec.chat(ask("a")).text, rec.chat(ask("b")).text, rec.chat(ask("a")).text]
    assert first == ["echo #1: a", "echo #2: b", "echo #3: a"]
    assert len(tape.read_text().splitlines()) == 3

    replay = ReplayingDriver(tape, "echo", "m1")
    got = [replay.chat(ask(t)) for t in ("a", "b", "a", "a")]
    assert [r.text for r in got] == ["echo #1: a", "echo #2: b", "echo #3: a", "echo #3: a"]
    assert all(r.replayed for r in got) and got[0].usage.input_tokens == 10


def test_replay_miss_names_cassette_and_key(tmp_path: Path) -> None:
    tape = tmp_path / "tape.jsonl"
    RecordingDriver(EchoDriver("m1"), tape).chat(ask("known"))
    replay = ReplayingDriver(tape, "echo", "m1")
    unknown = ask("never recorded")
    with pytest.raises(CassetteMissError) as err:
        replay.chat(unknown)
    msg = str(err.value)
    assert str(tape) in msg and request_key("echo", "m1", unknown) in msg
    assert "'never recorded'" in msg
    # same request, other model: a miss too
    with pytest.raises(CassetteMissError):
        ReplayingDriver(tape, "echo", "m2").chat(ask("known"))


def test_replay_of_a_missing_or_corrupt_cassette(tmp_path: Path) -> None:
    with pytest.raises(DriverConfigError, match="does not exist"):
        ReplayingDriver(tmp_path / "none.jsonl", "echo", "m")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "k"}\n')
    with pytest.raises(DriverConfigError, match=r"bad.jsonl:1: unreadable entry"):
        Cassette(bad)


def test_auto_mode_replays_hits_and_records_misses(tmp_path: Path) -> None:
    tape = tmp_path / "tape.jsonl"
    live = EchoDriver("m")
    auto = ReplayingDriver(Cassette(tape), "echo", "m", fallback=live)
    assert auto.chat(ask("x")).text == "echo #1: x"
    again = ReplayingDriver(Cassette(tape), "echo", "m", fallback=live)
    assert again.chat(ask("x")).replayed and live.calls == 1


def test_call_log_records_success_errors_and_totals(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    ok = LoggingDriver(EchoDriver("m", fail_first=1, initial_delay_s=0.0), log)
    reply = ok.chat(ask("hello"))
    assert reply.attempts == 2 and reply.latency_s >= 0
    bad = LoggingDriver(EchoDriver("m", fail_first=9, max_attempts=2, initial_delay_s=0.0), log)
    with pytest.raises(DriverUnavailableError):
        bad.chat(ask("x"))
    records = DriverCallLog.read(log)
    assert [("error" in r) for r in records] == [False, True]
    assert records[0]["driver"] == "echo/m" and records[0]["request"]["metadata"] == {"who": "test"}
    assert records[0]["usage"] == {"input_tokens": 10, "output_tokens": 3}
    assert records[0]["attempts"] == 2 and records[0]["scripted"] is False
    assert records[1]["error"]["type"] == "DriverUnavailableError"
    assert records[1]["attempts"] == 2  # the failed call's retries are counted too
    totals = DriverCallLog.totals(log)
    assert totals == {
        "calls": 1,  # answered calls, as the gateway's budget counts them
        "errors": 1,
        "refused": 0,
        "retries": 2,
        "input_tokens": 10,
        "output_tokens": 3,
        "cost_usd": 0.0,
        "scripted": False,
        "replayed": 0,
    }
    json.dumps(records)  # plain JSON


def test_streaming_through_wrappers_records_the_final_response(tmp_path: Path) -> None:
    tape, log = tmp_path / "t.jsonl", tmp_path / "l.jsonl"
    driver = LoggingDriver(RecordingDriver(EchoDriver("m"), tape), log)
    chunks = list(driver.stream(ask("s")))
    assert "".join(c.text for c in chunks) == "echo #1: s"
    assert chunks[-1].response is not None and chunks[-1].response.text == "echo #1: s"
    assert DriverCallLog.read(log)[0]["streamed"] is True
    assert ReplayingDriver(tape, "echo", "m").chat(ask("s")).text == "echo #1: s"


def _echo_registry() -> Registry:
    import types

    from autorl import hookimpl
    from autorl.specs import DriverSpec

    module = types.ModuleType("echo_plugin")

    @hookimpl
    def autorl_register_drivers() -> list[DriverSpec]:
        # the test module is already imported, so the registry's lazy import finds it
        return [DriverSpec(name="echo", factory=f"{EchoDriver.__module__}:EchoDriver")]

    module.autorl_register_drivers = autorl_register_drivers  # type: ignore[attr-defined]
    registry = Registry.empty()
    registry.register(module, "echo-plugin")
    return registry


def test_open_driver_builds_records_logs_and_replays_without_a_registry(tmp_path: Path) -> None:
    tape, log = tmp_path / "t.jsonl", tmp_path / "l.jsonl"
    live = open_driver(
        "echo/some/model", registry=_echo_registry(), cassette=tape, call_log=log, max_attempts=1
    )
    assert (live.name, live.model) == ("echo", "some/model")
    assert live.complete([{"role": "user", "content": "q"}]).text == "echo #1: q"
    offline = open_driver("echo/some/model", cassette=tape, cassette_mode="replay")
    assert offline.complete([{"role": "user", "content": "q"}]).replayed


@pytest.mark.parametrize("name", ["gpt-5.2", "openai/", "/gpt", ""])
def test_bad_driver_names(name: str) -> None:
    with pytest.raises(DriverConfigError, match="is not <backend>/<model>"):
        open_driver(name)


def test_unknown_driver_options_are_listed() -> None:
    with pytest.raises(DriverConfigError, match=r"echo/m: unknown option\(s\) colour"):
        EchoDriver("m", colour="red")
    with pytest.raises(DriverConfigError, match=r"max_attempt \(did you mean 'max_attempts'\?\)"):
        EchoDriver("m", max_attempt=2)
