"""The anthropic backend over real HTTP against the fake provider (official SDK underneath)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from autorl_driver_anthropic.driver import AnthropicDriver
from autorl_llm.drivers import ChatRequest, open_driver
from autorl_llm.drivers.errors import DriverAPIError, DriverConfigError, DriverTimeoutError
from autorl_llm.testing import Answer, Delay, Fail, FakeProvider
from autorl_testing import DriverConformance, registry_with
from autorl_testing.providers import FAST, TOOLS, USER, tool_round_trip

MODEL = "claude-sonnet-4-6"


class TestAnthropicConformance(DriverConformance):
    plugin_module = "autorl_driver_anthropic.plugin"
    messages = USER
    model = MODEL


def test_normal_answer_with_usage_cost_and_key(fake: FakeProvider, env: dict) -> None:
    fake.enqueue(Answer("Four.", input_tokens=1000, output_tokens=100))
    reply = AnthropicDriver(MODEL, env=env).complete(USER, system="Be brief.", stop=["\n\n"])
    assert (reply.text, reply.finish_reason, reply.attempts) == ("Four.", "stop", 1)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (1000, 100)
    assert reply.cost_usd == pytest.approx((1000 * 3 + 100 * 15) / 1e6)
    sent = fake.requests[-1]
    # anthropic SDK 2.x sends the key as a Bearer token, older ones as x-api-key
    sent_key = sent.headers.get("x-api-key") or sent.headers["authorization"].removeprefix(
        "Bearer "
    )
    assert sent_key == "sk-ant-test" and sent.api == "anthropic"
    assert sent.body["system"] == "Be brief." and sent.body["stop_sequences"] == ["\n\n"]
    assert sent.body["max_tokens"] == 4096  # the API requires it; the driver's default


def test_temperature_reaches_the_api_whatever_the_sdk_version(
    fake: FakeProvider, env: dict
) -> None:
    """anthropic SDK 2.x dropped ``temperature`` from ``messages.create``; it must still be sent
    (a judge at temperature 0 must not crash nor silently sample)."""
    fake.enqueue(Answer("m"), Answer("M"))
    driver = AnthropicDriver(MODEL, env=env)
    assert driver.complete(USER, temperature=0.0).text == "m"
    assert fake.requests[-1].body["temperature"] == 0.0
    assert driver.complete(USER, temperature=1.7).text == "M"
    assert fake.requests[-1].body["temperature"] == 1.0  # the API's maximum


@pytest.mark.parametrize("status", [429, 529, 500])
def test_recovers_from_rate_limits_overload_and_server_errors(
    fake: FakeProvider, env: dict, status: int
) -> None:
    fake.enqueue(Fail(status, retry_after=0.3 if status == 429 else None), Answer("recovered"))
    started = time.monotonic()
    reply = AnthropicDriver(MODEL, env=env, **FAST).complete(USER)
    assert reply.text == "recovered" and reply.attempts == 2
    if status == 429:
        assert time.monotonic() - started >= 0.3, "Retry-After was not honoured"


def test_timeout_fails_cleanly(fake: FakeProvider, env: dict) -> None:
    fake.enqueue(Delay(5), Delay(5))
    driver = AnthropicDriver(MODEL, env=env, timeout_s=0.3, max_attempts=2, **FAST)
    started = time.monotonic()
    with pytest.raises(DriverTimeoutError, match=r"no answer within 0.3 s \(2 attempts\)"):
        driver.complete(USER)
    assert time.monotonic() - started < 3


def test_bad_key_is_not_retried(fake: FakeProvider, env: dict) -> None:
    with pytest.raises(DriverAPIError) as err:
        AnthropicDriver(MODEL, env={**env, "ANTHROPIC_API_KEY": "nope"}, **FAST).complete(USER)
    assert err.value.status == 401 and len(fake.requests) == 1


def test_streaming_text_tool_calls_and_usage(fake: FakeProvider, env: dict) -> None:
    fake.enqueue(Answer("Let me check that.", tool_calls=(("bash", {"command": "ls"}),)))
    chunks = list(
        AnthropicDriver(MODEL, env=env).stream(ChatRequest.from_messages(USER, tools=TOOLS))
    )
    texts = [c.text for c in chunks if c.text]
    assert len(texts) >= 2 and "".join(texts) == "Let me check that."
    final = chunks[-1].response
    assert final is not None and final.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("bash", {"command": "ls"})]
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0
    assert fake.requests[-1].stream


def test_tool_round_trip_becomes_tool_use_and_tool_result_blocks(
    fake: FakeProvider, env: dict
) -> None:
    messages = [*tool_round_trip("t1", "Checking."), {"role": "user", "content": "So?"}]
    AnthropicDriver(MODEL, env=env).complete(messages, tools=TOOLS)
    body = fake.requests[-1].body
    assert body["tools"] == [
        {"name": "bash", "description": "run", "input_schema": {"type": "object"}}
    ]
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "echo 4"}},
    ]
    # the tool result and the next user text are merged into one user turn
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "4"},
            {"type": "text", "text": "So?"},
        ],
    }


def test_missing_key_names_the_variable() -> None:
    with pytest.raises(DriverConfigError, match="ANTHROPIC_API_KEY is not set in the harness"):
        AnthropicDriver(MODEL, env={})


def test_record_then_replay_offline(tmp_path: Path) -> None:
    tape = tmp_path / "tape.jsonl"
    with FakeProvider() as fake:
        live = open_driver(
            f"anthropic/{MODEL}",
            registry=registry_with("autorl_driver_anthropic.plugin"),
            cassette=tape,
            env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": fake.url},
        )
        recorded = live.complete(USER)
    replayed = open_driver(f"anthropic/{MODEL}", cassette=tape, cassette_mode="replay").complete(
        USER
    )
    assert replayed.replayed and replayed.text == recorded.text == "ok"
