"""The gemini backend over real HTTP against the fake provider."""

from __future__ import annotations

import time

import pytest
from autorl_driver_gemini.driver import GeminiDriver
from autorl_llm.drivers import ChatRequest
from autorl_llm.drivers.errors import DriverAPIError, DriverConfigError, DriverTimeoutError
from autorl_llm.testing import Answer, Delay, Fail, FakeProvider
from autorl_testing import DriverConformance
from autorl_testing.providers import FAST, TOOLS, USER, fake_provider_fixtures, tool_round_trip

MODEL = "gemini-2.5-flash"
KEY = "gm-test"

fake, env = fake_provider_fixtures(
    "gemini", api_key=KEY, key_var="GEMINI_API_KEY", url_var="GOOGLE_GEMINI_BASE_URL"
)


class TestGeminiConformance(DriverConformance):
    plugin_module = "autorl_driver_gemini.plugin"
    messages = USER
    model = MODEL


def test_normal_answer_usage_and_cost(fake: FakeProvider, env: dict) -> None:
    fake.enqueue(Answer("Four.", input_tokens=1000, output_tokens=100))
    reply = GeminiDriver(MODEL, env=env).complete(USER, system="Be brief.", max_tokens=20)
    assert (reply.text, reply.finish_reason) == ("Four.", "stop")
    assert reply.cost_usd == pytest.approx((1000 * 0.30 + 100 * 2.50) / 1e6)
    sent = fake.requests[-1]
    assert sent.path == f"/v1beta/models/{MODEL}:generateContent"
    assert sent.headers["x-goog-api-key"] == KEY
    assert sent.body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert sent.body["generationConfig"] == {"maxOutputTokens": 20}


def test_retries_then_times_out_cleanly(fake: FakeProvider, env: dict) -> None:
    fake.enqueue(Fail(429, retry_after=0.2), Answer("ok"))
    assert GeminiDriver(MODEL, env=env, **FAST).complete(USER).attempts == 2
    fake.enqueue(Delay(5), Delay(5))
    started = time.monotonic()
    with pytest.raises(DriverTimeoutError):
        GeminiDriver(MODEL, env=env, timeout_s=0.3, max_attempts=2, **FAST).complete(USER)
    assert time.monotonic() - started < 3
    with pytest.raises(DriverAPIError, match="HTTP 401"):
        GeminiDriver(MODEL, env={**env, "GEMINI_API_KEY": "bad"}).complete(USER)


def test_streaming_and_tool_calls(fake: FakeProvider, env: dict) -> None:
    fake.enqueue(Answer("Let me check that.", tool_calls=(("bash", {"command": "ls"}),)))
    chunks = list(GeminiDriver(MODEL, env=env).stream(ChatRequest.from_messages(USER, tools=TOOLS)))
    assert len([c for c in chunks if c.text]) >= 2
    final = chunks[-1].response
    assert final.text == "Let me check that." and final.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("bash", {"command": "ls"})]
    assert final.usage.output_tokens > 0 and fake.requests[-1].path.endswith(
        ":streamGenerateContent"
    )


def test_tool_results_are_sent_as_function_responses(fake: FakeProvider, env: dict) -> None:
    GeminiDriver(MODEL, env=env).complete(tool_round_trip(), tools=TOOLS)
    body = fake.requests[-1].body
    assert body["contents"][1] == {
        "role": "model",
        "parts": [{"functionCall": {"name": "bash", "args": {"command": "echo 4"}}}],
    }
    assert body["contents"][2]["parts"][0]["functionResponse"] == {
        "name": "bash",
        "response": {"content": "4"},
    }
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "bash"


def test_missing_key_names_both_variables() -> None:
    with pytest.raises(DriverConfigError, match="GEMINI_API_KEY or GOOGLE_API_KEY is not set"):
        GeminiDriver(MODEL, env={})


def test_tool_call_ids_are_unique_per_conversation(fake: FakeProvider, env: dict) -> None:
    """Gemini's functionCall carries no id. Two turns calling the same tool once used to get
    the same made-up id (call_0_bash) and CLIs dropped their later tool results and looped."""
    fake.enqueue(Answer("", tool_calls=(("bash", {"command": "ls"}),)))
    fake.enqueue(Answer("", tool_calls=(("bash", {"command": "pwd"}),)))
    driver = GeminiDriver(MODEL, env=env)
    first = driver.chat(ChatRequest.from_messages(USER, tools=TOOLS)).tool_calls[0]
    history = [
        *USER,
        {"role": "assistant", "content": "", "tool_calls": [first.to_dict()]},
        {"role": "tool", "tool_call_id": first.id, "name": "bash", "content": "a b"},
    ]
    second = driver.chat(ChatRequest.from_messages(history, tools=TOOLS)).tool_calls[0]
    assert "'id'" not in str(fake.requests[-1].body)  # the upstream sent none: none go back
    assert first.id and second.id and first.id != second.id


def test_parallel_tool_results_go_upstream_in_call_order() -> None:
    """Claude Code returns parallel results as they finish; Gemini pairs them by position."""
    from autorl_driver_gemini.driver import gemini_contents
    from autorl_llm.drivers import ChatRequest

    calls = [
        {"id": "a", "name": "Bash", "arguments": {"command": "echo one"}},
        {"id": "b", "name": "Bash", "arguments": {"command": "echo two"}},
    ]
    request = ChatRequest(
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": calls},
            {"role": "tool", "tool_call_id": "b", "content": "two"},
            {"role": "tool", "tool_call_id": "a", "content": "one"},
            {"role": "user", "content": "next"},
        ]
    )
    contents = gemini_contents(request)
    answers = [p["functionResponse"]["response"]["content"] for p in contents[2]["parts"][:2]]
    assert answers == ["one", "two"] and contents[2]["parts"][2] == {"text": "next"}
