"""Run token, token and cost budgets, errors in each API's format, and the upstream key's path."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from autorl_llm.drivers import DriverCallLog, open_driver
from autorl_llm.gateway import Gateway

from .helpers import TOKEN, SlowStreamDriver, scripted

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}
BODIES = {
    "/v1/chat/completions": CHAT,
    "/v1/responses": {"model": "m", "input": "hello there"},
    "/v1/messages": {**CHAT, "max_tokens": 16},
    "/v1beta/models/g:generateContent": {"contents": [{"parts": [{"text": "hello there"}]}]},
}


@pytest.mark.parametrize("path", list(BODIES))
def test_every_api_needs_the_run_token(gateway: Gateway, path: str) -> None:
    url = gateway.url + path
    assert httpx.post(url, json=BODIES[path]).status_code == 401
    wrong = {"authorization": "Bearer nope", "x-api-key": "nope"}
    assert httpx.post(url, json=BODIES[path], headers=wrong).status_code == 401
    assert httpx.get(gateway.url + "/v1/models").status_code == 401
    assert not gateway.log.path.exists()  # refused before any driver call
    for headers, params in (
        ({"authorization": f"Bearer {TOKEN}"}, {}),
        ({"x-api-key": TOKEN}, {}),
        ({"x-goog-api-key": TOKEN}, {}),
        ({}, {"key": TOKEN}),
    ):
        r = httpx.post(url, json=BODIES[path], headers=headers, params=params)
        assert r.status_code == 200, r.text


def test_gateway_listens_on_loopback_and_lists_its_model(gateway: Gateway) -> None:
    assert gateway.url.startswith("http://127.0.0.1:")
    r = httpx.get(gateway.url + "/v1/models", headers={"authorization": f"Bearer {TOKEN}"})
    assert r.json()["data"][0]["id"] == "test-script"


def test_call_log_records_request_response_tokens_latency_cost(gateway: Gateway) -> None:
    r = httpx.post(
        gateway.url + "/v1/chat/completions",
        json={**CHAT, "messages": [{"role": "system", "content": "be brief"}, *CHAT["messages"]]},
        headers={"authorization": f"Bearer {TOKEN}"},
    )
    usage = r.json()["usage"]
    (record,) = DriverCallLog.read(gateway.log.path)
    assert record["driver"] == "scripted/test-script"
    assert record["request"]["system"] == "be brief"
    assert record["request"]["metadata"] == {"api": "openai-chat", "client_model": "m"}
    assert record["response"]["tool_calls"][0]["name"] == "shell"
    assert record["usage"] == {
        "input_tokens": usage["prompt_tokens"],
        "output_tokens": usage["completion_tokens"],
    }
    assert record["scripted"] is True and record["cost_usd"] == 0.0 and record["latency_s"] >= 0
    totals = DriverCallLog.totals(gateway.log.path)
    assert totals["calls"] == 1 and totals["input_tokens"] == usage["prompt_tokens"]


def _over_budget_gateway(tmp_path: Path, seen: list[Any]) -> Gateway:
    script = {"replies": ["word " * 80], "when_exhausted": "repeat_last"}
    return Gateway(
        scripted(script),
        token=TOKEN,
        log_path=tmp_path / "calls.jsonl",
        max_tokens=60,
        on_exhausted=lambda reason, spend: seen.append((reason, spend)),
    )


def test_token_budget_stops_the_agent_with_a_clear_error_in_each_format(tmp_path: Path) -> None:
    import anthropic
    import openai

    seen: list[Any] = []
    with _over_budget_gateway(tmp_path, seen) as gw:
        client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=TOKEN)  # default retries on
        first = client.chat.completions.create(model="m", messages=CHAT["messages"])
        assert first.usage.total_tokens >= 60  # this call crossed the limit and was served
        with pytest.raises(openai.PermissionDeniedError, match="token budget is spent") as info:
            client.chat.completions.create(model="m", messages=CHAT["messages"])
        assert info.value.body["type"] == "insufficient_quota"
        with pytest.raises(openai.RateLimitError, match="token budget is spent"):
            client.responses.create(model="m", input="hi")
        claude = anthropic.Anthropic(base_url=gw.url, api_key=TOKEN)
        with pytest.raises(anthropic.RateLimitError, match="token budget is spent"):
            claude.messages.create(model="c", max_tokens=10, messages=CHAT["messages"])
        r = httpx.post(
            gw.url + "/v1beta/models/g:streamGenerateContent?alt=sse",
            json=BODIES["/v1beta/models/g:generateContent"],
            headers={"x-goog-api-key": TOKEN},
        )
        assert r.status_code == 403 and r.json()["error"]["status"] == "PERMISSION_DENIED"
        assert "no more model calls" in r.json()["error"]["message"]
        assert r.headers["x-should-retry"] == "false"
    # the SDKs honoured x-should-retry: one refusal each, no retry storm
    assert gw.budget.refused == 4 and gw.budget.calls == 1
    assert [reason for reason, _ in seen] == ["token_budget"]
    assert seen[0][1]["tokens"] >= 60 and seen[0][1]["max_tokens"] == 60
    records = DriverCallLog.read(tmp_path / "calls.jsonl")
    assert [r.get("error", {}).get("type") for r in records] == [
        None,
        "BudgetRefused",
        "BudgetRefused",
        "BudgetRefused",
        "BudgetRefused",
    ]


def test_cost_budget_counts_the_backends_prices_and_keeps_the_upstream_key(
    tmp_path: Path,
) -> None:
    """A real backend (openai driver) behind the gateway, talking to the local fake provider."""
    from autorl_llm.testing import Answer, FakeProvider

    with FakeProvider(
        api_key="sk-upstream", default=Answer("hi", input_tokens=1000, output_tokens=1000)
    ) as fake:
        driver = open_driver(
            "openai/gpt-test",
            base_url=fake.openai_base_url,
            env={"OPENAI_API_KEY": "sk-upstream"},
            prices={"input": 1.0, "output": 2.0},  # USD per million tokens
            max_attempts=1,
        )
        seen: list[Any] = []
        with Gateway(
            driver,
            token=TOKEN,
            log_path=tmp_path / "calls.jsonl",
            max_cost_usd=0.005,
            on_exhausted=lambda reason, spend: seen.append(reason),
        ) as gw:
            statuses = [
                httpx.post(
                    gw.url + "/v1/messages",
                    json={**CHAT, "max_tokens": 8},
                    headers={"x-api-key": TOKEN},
                ).status_code
                for _ in range(3)
            ]
    assert statuses == [200, 200, 429]  # $0.003 per call: the second crosses $0.005
    assert seen == ["cost_budget"] and gw.budget.cost_usd == pytest.approx(0.006)
    assert [r.headers.get("authorization") for r in fake.requests] == ["Bearer sk-upstream"] * 2
    assert all(TOKEN not in str(r.headers) for r in fake.requests)
    totals = DriverCallLog.totals(tmp_path / "calls.jsonl")
    assert totals["cost_usd"] == pytest.approx(0.006) and totals["refused"] == 1
    assert totals["calls"] == gw.budget.calls == 2 and totals["errors"] == 0


def test_driver_failures_reach_the_agent_as_its_apis_errors(tmp_path: Path) -> None:
    script = {"replies": ["only one answer"]}  # when_exhausted: error -> the 2nd call fails
    with Gateway(scripted(script), token=TOKEN, log_path=tmp_path / "c.jsonl") as gw:
        headers = {"x-api-key": TOKEN}
        url = gw.url + "/v1/messages"
        assert httpx.post(url, json={**CHAT, "max_tokens": 8}, headers=headers).status_code == 200
        r = httpx.post(url, json={**CHAT, "max_tokens": 8, "stream": True}, headers=headers)
        assert r.status_code == 502
        error = r.json()
        assert error["type"] == "error" and "no reply for call #2" in error["error"]["message"]
        bad = httpx.post(url, json={"model": "c", "messages": "hi"}, headers=headers)
        assert bad.status_code == 400 and "expected a list" in bad.json()["error"]["message"]
        notjson = httpx.post(url, content=b"{", headers=headers)
        assert notjson.status_code == 400


def test_a_stream_the_client_abandons_is_still_charged(tmp_path: Path) -> None:
    driver = SlowStreamDriver("slow-1", prices={"input": 1000.0, "output": 1000.0})
    with Gateway(driver, token=TOKEN, log_path=tmp_path / "calls.jsonl") as gw:
        body = {**CHAT, "stream": True}
        headers = {"authorization": f"Bearer {TOKEN}"}
        with httpx.stream("POST", gw.url + "/v1/chat/completions", json=body, headers=headers) as r:
            lines = r.iter_lines()
            assert '"role": "assistant"' in next(line for line in lines if line)
            next(line for line in lines if "word" in line)  # one word arrived, then hang up
        deadline = time.monotonic() + 10
        while gw.budget.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    (record,) = DriverCallLog.read(tmp_path / "calls.jsonl")
    assert record["request"]["metadata"]["client_disconnected"] is True
    assert 0 < record["usage"]["output_tokens"] < 100  # an estimate of what was sent
    assert gw.budget.tokens > 0 and gw.budget.cost_usd > 0
