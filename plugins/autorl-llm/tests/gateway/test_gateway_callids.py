"""Tool-call ids: unique toward the CLI whatever the upstream sends, the upstream's own toward it.

Regression: an upstream that sends no id (Gemini) or ``call_0`` on every turn made the CLIs
see two calls under one id; Claude Code then looped (2,021 calls in 300 s) and OpenHands
repeated its first command. Before the fix the first assertion here failed.
"""

from __future__ import annotations

from pathlib import Path

import autorl_driver_openai  # noqa: F401
import httpx
from autorl_llm.drivers import open_driver
from autorl_llm.gateway import Gateway

from .helpers import TOKEN

AUTH = {"authorization": f"Bearer {TOKEN}"}
TOOLS = [{"type": "function", "function": {"name": "sh", "parameters": {"type": "object"}}}]


def test_repeated_upstream_ids_reach_the_client_unique_and_go_back_as_they_were(
    tmp_path: Path,
) -> None:
    from autorl_llm.testing import Answer, FakeProvider

    step = Answer("", tool_calls=(("sh", {"cmd": "ls"}),))
    with FakeProvider(default=step, ids="numbered") as fake:  # call_0 on every answer
        driver = open_driver("openai/m", base_url=fake.openai_base_url, env={"OPENAI_API_KEY": "k"})
        with Gateway(driver, token=TOKEN, log_path=tmp_path / "calls.jsonl") as gw:
            messages: list[dict] = [{"role": "user", "content": "go"}]
            seen = []
            for turn in range(3):
                reply = httpx.post(
                    f"{gw.url}/v1/chat/completions",
                    json={"model": "m", "messages": messages, "tools": TOOLS},
                    headers=AUTH,
                ).json()["choices"][0]["message"]
                (call,) = reply["tool_calls"]
                seen.append(call["id"])
                messages += [
                    reply,
                    {"role": "tool", "tool_call_id": call["id"], "content": f"out {turn}"},
                ]
    assert len(set(seen)) == 3  # unique toward the client
    assert fake.issued_ids == ["call_0"] * 3
    last = fake.requests[-1].body["messages"]
    upstream_ids = [c["id"] for m in last for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert upstream_ids == results == ["call_0", "call_0"]  # the upstream sees its own ids


def test_unique_upstream_ids_pass_through_unchanged(tmp_path: Path) -> None:
    from autorl_llm.testing import Answer, FakeProvider

    step = Answer("", tool_calls=(("sh", {"cmd": "ls"}), ("sh", {"cmd": "pwd"})))
    with FakeProvider(default=step, ids="unique") as fake:
        driver = open_driver("openai/m", base_url=fake.openai_base_url, env={"OPENAI_API_KEY": "k"})
        with Gateway(driver, token=TOKEN, log_path=tmp_path / "calls.jsonl") as gw:
            reply = httpx.post(
                f"{gw.url}/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "go"}]},
                headers=AUTH,
            ).json()["choices"][0]["message"]
    assert [c["id"] for c in reply["tool_calls"]] == fake.issued_ids
