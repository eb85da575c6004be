"""The fake provider's wire formats, read with plain httpx (what agent CLIs and the gateway see)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
from autorl_llm.testing import Answer, Delay, Fail, FakeProvider, ReceivedRequest


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(api_key="k") as provider:
        yield provider


def sse_data(text: str) -> list[str]:
    return [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]


def test_chat_stream_ends_with_usage_and_done(fake: FakeProvider) -> None:
    fake.enqueue(Answer("hello world", input_tokens=7, output_tokens=2))
    body = {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "hi"}],
    }
    r = httpx.post(
        f"{fake.openai_base_url}/chat/completions", json=body, headers={"authorization": "Bearer k"}
    )
    data = sse_data(r.text)
    assert r.headers["content-type"].startswith("text/event-stream") and data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert (
        "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        == "hello world"
    )
    assert chunks[-1]["usage"] == {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}


def test_anthropic_stream_event_order(fake: FakeProvider) -> None:
    fake.enqueue(Answer("hi", tool_calls=(("bash", {"c": 1}),)))
    r = httpx.post(
        f"{fake.anthropic_base_url}/v1/messages",
        headers={"x-api-key": "k"},
        json={
            "model": "c",
            "max_tokens": 5,
            "stream": True,
            "messages": [{"role": "user", "content": "x"}],
        },
    )
    events = [line[6:].strip() for line in r.text.splitlines() if line.startswith("event:")]
    assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"]
    assert events.count("content_block_start") == 2  # a text block and a tool_use block
    delta = json.loads(sse_data(r.text)[-2])
    assert delta["delta"]["stop_reason"] == "tool_use"


def test_errors_use_each_provider_format_and_retry_after(fake: FakeProvider) -> None:
    fake.enqueue(Fail(429, retry_after=2, message="slow down"))
    r = httpx.post(
        f"{fake.url}/v1/messages",
        headers={"x-api-key": "k"},
        json={"model": "c", "max_tokens": 5, "messages": []},
    )
    assert r.status_code == 429 and r.headers["retry-after"] == "2"
    assert r.json()["error"] == {"type": "rate_limit_error", "message": "slow down"}
    r = httpx.post(f"{fake.openai_base_url}/chat/completions", json={"model": "m", "messages": []})
    assert r.status_code == 401  # no key


def test_responder_decides_from_the_request_and_requests_are_kept(fake: FakeProvider) -> None:
    def by_tool_results(req: ReceivedRequest) -> Answer:
        done = sum(1 for m in req.body.get("messages", []) if m.get("role") == "tool")
        return Answer(f"{done} tool results so far")

    fake.responder = by_tool_results
    msgs = [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "1", "content": "y"}]
    r = httpx.post(
        f"{fake.openai_base_url}/chat/completions",
        headers={"authorization": "Bearer k"},
        json={"model": "m", "messages": msgs},
    )
    assert r.json()["choices"][0]["message"]["content"] == "1 tool results so far"
    assert fake.requests[-1].model == "m" and fake.requests[-1].behaviour == "Answer"


def test_stopping_does_not_wait_for_a_long_delay() -> None:
    import threading

    fake = FakeProvider().start()
    fake.enqueue(Delay(30))
    t = threading.Thread(
        target=lambda: httpx.post(
            f"{fake.openai_base_url}/chat/completions",
            timeout=10,
            json={"model": "m", "messages": []},
        ),
        daemon=True,
    )
    t.start()
    time.sleep(0.3)
    started = time.monotonic()
    fake.stop()
    assert time.monotonic() - started < 3
