"""The gateway over real HTTP: each provider API, streamed and not, with a tool-call round trip.

Clients are the official SDKs (openai, anthropic) and plain httpx for Gemini (what Gemini CLI
speaks); the backend is the scripted driver. Each conversation is: the user asks, the model calls
``shell``, the client sends the tool result back, the model answers in text.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from autorl_llm.drivers import DriverCallLog
from autorl_llm.gateway import Gateway

from .helpers import SHELL_TOOL, TOKEN

FINAL = "The workspace holds data and models."
LISTING = "data\nmodels\noutput"


def openai_chat(gw: Gateway, stream: bool) -> tuple[dict[str, Any], str]:
    import openai

    client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=TOKEN, max_retries=0)
    tools = [{"type": "function", "function": SHELL_TOOL}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is in the workspace?"}]

    def ask() -> Any:
        if not stream:
            return client.chat.completions.create(model="gpt-x", messages=messages, tools=tools)
        chunks = list(
            client.chat.completions.create(
                model="gpt-x",
                messages=messages,
                tools=tools,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
        return text, calls

    first = ask()
    if stream:
        _, calls = first
        call = {"id": calls[0].id, "name": calls[0].function.name, "args": calls[1].function}
        call["args"] = json.loads(call["args"].arguments)
    else:
        tc = first.choices[0].message.tool_calls[0]
        assert first.choices[0].finish_reason == "tool_calls"
        call = {"id": tc.id, "name": tc.function.name, "args": json.loads(tc.function.arguments)}
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
                }
            ],
        }
    )
    messages.append({"role": "tool", "tool_call_id": call["id"], "content": LISTING})
    second = ask()
    text = second[0] if stream else second.choices[0].message.content
    return call, text


def openai_responses(gw: Gateway, stream: bool) -> tuple[dict[str, Any], str]:
    import openai

    client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=TOKEN, max_retries=0)
    tools = [{"type": "function", **SHELL_TOOL}]
    items: list[Any] = [{"role": "user", "content": "What is in the workspace?"}]

    def ask() -> Any:
        if not stream:
            return client.responses.create(model="gpt-x", input=items, tools=tools)
        with client.responses.stream(model="gpt-x", input=items, tools=tools) as events:
            return events.get_final_response()

    first = ask()
    fc = next(o for o in first.output if o.type == "function_call")
    call = {"id": fc.call_id, "name": fc.name, "args": json.loads(fc.arguments)}
    items += [
        {
            "type": "function_call",
            "call_id": fc.call_id,
            "name": fc.name,
            "arguments": fc.arguments,
        },
        {"type": "function_call_output", "call_id": fc.call_id, "output": LISTING},
    ]
    return call, ask().output_text


def anthropic_messages(gw: Gateway, stream: bool) -> tuple[dict[str, Any], str]:
    import anthropic

    client = anthropic.Anthropic(base_url=gw.url, api_key=TOKEN, max_retries=0)
    tools = [
        {
            "name": SHELL_TOOL["name"],
            "description": SHELL_TOOL["description"],
            "input_schema": SHELL_TOOL["parameters"],
        }
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is in the workspace?"}]

    def ask() -> Any:
        params = {"model": "claude-x", "max_tokens": 256, "messages": messages, "tools": tools}
        if not stream:
            return client.messages.create(**params)
        with client.messages.stream(**params) as events:
            return events.get_final_message()

    first = ask()
    assert first.stop_reason == "tool_use"
    use = next(b for b in first.content if b.type == "tool_use")
    call = {"id": use.id, "name": use.name, "args": use.input}
    messages.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
    messages.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": LISTING}],
        }
    )
    second = ask()
    return call, "".join(b.text for b in second.content if b.type == "text")


def gemini(gw: Gateway, stream: bool) -> tuple[dict[str, Any], str]:
    tools = [{"functionDeclarations": [SHELL_TOOL]}]
    contents: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "What is in the workspace?"}]}
    ]
    action = "streamGenerateContent?alt=sse" if stream else "generateContent"
    url = f"{gw.url}/v1beta/models/gemini-x:{action}"

    def ask() -> list[dict[str, Any]]:
        system = {"parts": [{"text": "You are terse."}]}
        body = {"contents": contents, "tools": tools, "systemInstruction": system}
        r = httpx.post(url, json=body, headers={"x-goog-api-key": TOKEN}, timeout=30)
        assert r.status_code == 200, r.text
        if not stream:
            return [r.json()]
        assert r.headers["content-type"].startswith("text/event-stream")
        return [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:")]

    events = ask()
    parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    fc = next(p["functionCall"] for p in parts if "functionCall" in p)
    assert events[-1]["usageMetadata"]["totalTokenCount"] > 0
    contents.append({"role": "model", "parts": parts})
    contents.append(
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": fc["name"], "response": {"output": LISTING}}}],
        }
    )
    text = "".join(p.get("text", "") for e in ask() for p in e["candidates"][0]["content"]["parts"])
    return {"id": None, "name": fc["name"], "args": fc["args"]}, text


CLIENTS = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic_messages,
    "gemini": gemini,
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("api", list(CLIENTS))
def test_tool_call_round_trip(gateway: Gateway, api: str, stream: bool) -> None:
    call, text = CLIENTS[api](gateway, stream)
    assert call["name"] == "shell" and call["args"] == {"command": "ls"}
    assert text == FINAL
    records = DriverCallLog.read(gateway.log.path)
    assert len(records) == 2 and all(r["streamed"] is stream for r in records)
    assert all(r["request"]["metadata"]["api"] == api for r in records)
    # the tool result reached the driver as a tool message answering the model's call
    second = records[1]["request"]["messages"]
    assert second[-2]["role"] == "assistant" and second[-2]["tool_calls"][0]["name"] == "shell"
    assert second[-1]["role"] == "tool" and LISTING in second[-1]["content"]
    assert second[-1]["tool_call_id"] == second[-2]["tool_calls"][0]["id"]
    assert records[1]["response"]["text"] == FINAL
    assert all(r["usage"]["input_tokens"] > 0 and r["usage"]["output_tokens"] > 0 for r in records)
    assert gateway.budget.calls == 2 and gateway.budget.tokens == sum(
        r["usage"]["input_tokens"] + r["usage"]["output_tokens"] for r in records
    )
