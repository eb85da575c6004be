"""The openai backend over real HTTP against the fake provider (official SDK underneath)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from autorl_driver_openai.driver import OpenAIDriver
from autorl_llm.drivers import ChatRequest, open_driver
from autorl_llm.drivers.errors import (
    CassetteMissError,
    DriverAPIError,
    DriverConfigError,
    DriverRequestError,
    DriverTimeoutError,
)
from autorl_llm.testing import Answer, Delay, Fail, FakeProvider
from autorl_testing import DriverConformance, registry_with
from autorl_testing.providers import FAST, TOOLS, USER, tool_round_trip


class TestOpenAIConformance(DriverConformance):
    plugin_module = "autorl_driver_openai.plugin"
    messages = USER
    model = "gpt-4o"


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_normal_answer_with_usage_cost_and_key(fake: FakeProvider, env: dict, api: str) -> None:
    fake.enqueue(Answer("Four.", input_tokens=1000, output_tokens=100))
    reply = OpenAIDriver("gpt-4o", env=env, api=api).complete(USER, system="Be brief.")
    assert (reply.text, reply.finish_reason, reply.attempts) == ("Four.", "stop", 1)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (1000, 100)
    assert reply.cost_usd == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6)
    assert reply.latency_s > 0 and not reply.scripted
    sent = fake.requests[-1]
    assert sent.headers["authorization"] == "Bearer sk-test-openai"
    assert sent.api == ("openai-chat" if api == "chat" else "openai-responses")
    if api == "chat":
        assert sent.body["messages"][0] == {"role": "system", "content": "Be brief."}
    else:
        assert sent.body["instructions"] == "Be brief." and sent.body["store"] is False


@pytest.mark.parametrize("status", [429, 500, 503])
def test_recovers_from_rate_limits_and_server_errors(
    fake: FakeProvider, env: dict, status: int
) -> None:
    fake.enqueue(Fail(status, retry_after=0.3 if status == 429 else None), Answer("recovered"))
    started = time.monotonic()
    reply = OpenAIDriver("gpt-4o", env=env, **FAST).complete(USER)
    elapsed = time.monotonic() - started
    assert reply.text == "recovered" and reply.attempts == 2
    assert [r.behaviour for r in fake.requests] == ["Fail", "Answer"]
    if status == 429:
        assert elapsed >= 0.3, "Retry-After was not honoured"


def test_timeout_fails_cleanly_after_the_allowed_attempts(fake: FakeProvider, env: dict) -> None:
    fake.enqueue(Delay(5), Delay(5))
    driver = OpenAIDriver("gpt-4o", env=env, timeout_s=0.3, max_attempts=2, **FAST)
    started = time.monotonic()
    with pytest.raises(
        DriverTimeoutError, match=r"openai/gpt-4o: no answer within 0.3 s \(2 attempts\)"
    ):
        driver.complete(USER)
    assert time.monotonic() - started < 3


def test_permanent_errors_are_not_retried(fake: FakeProvider, env: dict) -> None:
    bad_key = {**env, "OPENAI_API_KEY": "wrong"}
    with pytest.raises(DriverAPIError) as err:
        OpenAIDriver("gpt-4o", env=bad_key, **FAST).complete(USER)
    assert err.value.status == 401 and "API key" in str(err.value)
    assert len(fake.requests) == 1


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_streaming_text_tool_calls_and_usage(fake: FakeProvider, env: dict, api: str) -> None:
    fake.enqueue(Answer("Let me check that.", tool_calls=(("bash", {"command": "ls"}),)))
    driver = OpenAIDriver("gpt-5.2", env=env, api=api)
    chunks = list(driver.stream(ChatRequest.from_messages(USER, tools=TOOLS)))
    texts = [c.text for c in chunks if c.text]
    assert len(texts) >= 2 and "".join(texts) == "Let me check that."
    final = chunks[-1].response
    assert final is not None and final.text == "Let me check that."
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("bash", {"command": "ls"})]
    assert final.finish_reason == "tool_calls" and final.usage.output_tokens > 0
    assert fake.requests[-1].stream


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_tool_round_trip_is_sent_in_the_provider_format(
    fake: FakeProvider, env: dict, api: str
) -> None:
    messages = tool_round_trip()
    OpenAIDriver("gpt-4o", env=env, api=api).complete(messages, tools=TOOLS, max_tokens=50)
    body = fake.requests[-1].body
    if api == "chat":
        assert body["messages"][1]["tool_calls"][0]["function"] == {
            "name": "bash",
            "arguments": '{"command": "echo 4"}',
        }
        assert body["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": "4"}
        assert body["max_completion_tokens"] == 50 and body["tools"][0]["type"] == "function"
    else:
        assert body["input"][1] == {
            "type": "function_call",
            "call_id": "c1",
            "name": "bash",
            "arguments": '{"command": "echo 4"}',
        }
        assert body["input"][2] == {"type": "function_call_output", "call_id": "c1", "output": "4"}
        assert body["max_output_tokens"] == 50 and body["tools"][0]["name"] == "bash"


def test_configuration_errors_name_the_fix() -> None:
    with pytest.raises(DriverConfigError, match="openai/gpt-4o: OPENAI_API_KEY is not set"):
        OpenAIDriver("gpt-4o", env={})
    with pytest.raises(DriverConfigError, match="OPENAI_BASE_URL='localhost:1' is not an http"):
        OpenAIDriver("gpt-4o", env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "localhost:1"})
    with pytest.raises(DriverConfigError, match="api='completions' is not one of chat, responses"):
        OpenAIDriver("gpt-4o", env={"OPENAI_API_KEY": "k"}, api="completions")
    driver = OpenAIDriver("gpt-4o", env={"OPENAI_API_KEY": "k"}, api="responses")
    with pytest.raises(DriverRequestError, match="no stop sequences"):
        driver.complete(USER, stop=["\n"])


def test_record_with_the_server_then_replay_with_it_stopped(tmp_path: Path) -> None:
    tape = tmp_path / "judge.jsonl"
    registry = registry_with("autorl_driver_openai.plugin")
    with FakeProvider(api_key="k") as fake:
        fake.enqueue(Answer("m", input_tokens=50, output_tokens=1))
        live = open_driver(
            "openai/gpt-4o",
            registry=registry,
            cassette=tape,
            env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.openai_base_url},
        )
        recorded = live.complete(USER, temperature=0.0, metadata={"purpose": "judge"})
    # server stopped, no key in the environment: replay answers offline
    offline = open_driver("openai/gpt-4o", cassette=tape, cassette_mode="replay")
    replayed = offline.complete(USER, temperature=0.0)
    assert replayed.replayed and (replayed.text, replayed.usage) == (recorded.text, recorded.usage)
    with pytest.raises(CassetteMissError, match=r"judge\.jsonl has no answer for openai/gpt-4o"):
        offline.complete(USER, temperature=0.5)
