"""Upstream health: failed and retried calls become events and counts; refusals and the agent's
own malformed requests are not an outage; error bodies carry each API's real error type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import autorl_driver_openai  # noqa: F401
import httpx
import pytest
from autorl_llm.drivers import DriverCallLog, open_driver
from autorl_llm.gateway import Gateway

from .helpers import TOKEN

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
AUTH = {"authorization": f"Bearer {TOKEN}"}


def serve(fake: Any, tmp_path: Path, **budget: Any) -> tuple[Gateway, list[tuple[str, dict]]]:
    driver = open_driver(
        "openai/gpt-test",
        base_url=fake.openai_base_url,
        env={"OPENAI_API_KEY": "sk-upstream"},
        max_attempts=2,
        initial_delay_s=0,
    )
    heard: list[tuple[str, dict]] = []
    gateway = Gateway(
        driver,
        token=TOKEN,
        log_path=tmp_path / "calls.jsonl",
        on_upstream=lambda event, fields: heard.append((event, fields)),
        **budget,
    )
    return gateway.start(), heard


def test_an_outage_and_its_recovery_are_counted_and_heard(tmp_path: Path) -> None:
    from autorl_llm.testing import Answer, Fail, FakeProvider

    with FakeProvider() as fake:
        fake.enqueue(Fail(500), Answer("one"), Fail(503), Fail(503, message="still down"))
        fake.enqueue(Fail(429, retry_after=0), Fail(500), Answer("back"))
        gw, heard = serve(fake, tmp_path)
        try:
            codes = [
                httpx.post(f"{gw.url}/v1/chat/completions", json=CHAT, headers=AUTH)
                for _ in range(3)
            ]
            assert gw.health.down  # the last call failed: the upstream is down now
            codes.append(httpx.post(f"{gw.url}/v1/chat/completions", json=CHAT, headers=AUTH))
        finally:
            gw.stop()
    assert [r.status_code for r in codes] == [200, 502, 502, 200]
    failure = codes[1].json()["error"]
    assert failure["type"] == "server_error" and "still down" in failure["message"]
    assert [e for e, _ in heard] == [
        "driver_call_retried",
        "driver_call_failed",
        "driver_call_failed",
        "driver_recovered",
    ]
    assert heard[0][1]["attempts"] == 2 and heard[2][1]["consecutive_failures"] == 2
    assert heard[2][1]["error_type"] == "DriverUnavailableError"
    assert heard[3][1] == {"after_failed_calls": 2}
    health = gw.health.snapshot()
    assert health == {
        **health,
        "answered": 2,
        "failed": 2,
        "retried_calls": 1,
        "retries": 3,  # one retried success, two failed calls of two attempts each
        "down": False,
    }
    totals = DriverCallLog.totals(tmp_path / "calls.jsonl")
    assert (totals["calls"], totals["errors"], totals["retries"]) == (2, 2, 3)
    assert totals["calls"] == gw.budget.calls


def test_refusals_and_rejected_requests_are_not_an_outage(tmp_path: Path) -> None:
    from autorl_llm.testing import Answer, Fail, FakeProvider

    with FakeProvider(default=Answer("x", input_tokens=50, output_tokens=50)) as fake:
        fake.enqueue(Fail(400, message="context too long"))
        gw, heard = serve(fake, tmp_path, max_tokens=10)
        try:
            rejected = httpx.post(f"{gw.url}/v1/chat/completions", json=CHAT, headers=AUTH)
            served = httpx.post(f"{gw.url}/v1/chat/completions", json=CHAT, headers=AUTH)
            refused = httpx.post(f"{gw.url}/v1/chat/completions", json=CHAT, headers=AUTH)
        finally:
            gw.stop()
    assert (rejected.status_code, served.status_code, refused.status_code) == (400, 200, 403)
    assert rejected.json()["error"]["type"] == "invalid_request_error"
    assert refused.json()["error"]["type"] == "insufficient_quota"
    assert heard == [] and not gw.health.down and gw.health.failed == 0
    totals = DriverCallLog.totals(tmp_path / "calls.jsonl")
    assert (totals["calls"], totals["refused"]) == (1, 1)
    records = DriverCallLog.read(tmp_path / "calls.jsonl")
    assert records[-1]["refused"] is True and records[-1]["attempts"] == 0


@pytest.mark.parametrize(
    ("api", "status", "kind"),
    [
        ("openai-chat", 401, "authentication_error"),
        ("openai-chat", 404, "not_found_error"),
        ("openai-chat", 429, "rate_limit_error"),
        ("openai-chat", 502, "server_error"),
        ("anthropic", 502, "api_error"),
        ("gemini", 502, "UNAVAILABLE"),
    ],
)
def test_error_bodies_carry_the_apis_own_error_types(api: str, status: int, kind: str) -> None:
    from autorl_llm.drivers.wire.render import error_body

    error = error_body(api, status, "boom")["error"]
    assert (error.get("type") or error.get("status")) == kind
