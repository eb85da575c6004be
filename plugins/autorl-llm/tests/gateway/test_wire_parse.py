"""Requests shaped like the real agent CLIs send them, read into one ChatRequest."""

from __future__ import annotations

import httpx
import pytest
from autorl_llm.drivers.errors import DriverRequestError
from autorl_llm.drivers.wire import (
    parse_anthropic,
    parse_gemini,
    parse_openai_chat,
    parse_openai_responses,
)
from autorl_llm.gateway import Gateway

from .helpers import TOKEN


def test_claude_code_style_messages() -> None:
    parsed = parse_anthropic(
        {
            "model": "claude-sonnet-4-6",
            "max_tokens": 32000,
            "stream": True,
            "system": [
                {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "x"}},
                {"type": "text", "text": " Be brief."},
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "list files"}]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "s"},
                        {"type": "text", "text": "Sure."},
                        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"c": 1}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "is_error": True,
                            "content": [{"type": "text", "text": "no such dir"}],
                        },
                        {"type": "image", "source": {}},
                    ],
                },
            ],
            "tools": [
                {"name": "Bash", "description": "run", "input_schema": {"type": "object"}},
                {"type": "web_search_20250305", "name": "web_search"},
            ],
            "metadata": {"user_id": "u"},
        }
    )
    req = parsed.request
    assert parsed.stream and req.system == "You are Claude Code. Be brief."
    assert req.max_tokens == 32000 and [t["function"]["name"] for t in req.tools] == ["Bash"]
    assert parsed.dropped == ("tool web_search_20250305",)
    assert [m["role"] for m in req.messages] == ["user", "assistant", "tool", "user"]
    assert req.messages[1]["content"] == "Sure."  # thinking is not forwarded
    assert req.messages[1]["tool_calls"] == [
        {"id": "toolu_1", "name": "Bash", "arguments": {"c": 1}}
    ]
    assert req.messages[2] == {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "content": "ERROR: no such dir",
    }
    assert req.messages[3]["content"] == "[image omitted]"


def test_codex_style_responses_input() -> None:
    parsed = parse_openai_responses(
        {
            "model": "gpt-5.2",
            "instructions": "You are Codex.",
            "stream": True,
            "input": [
                {
                    "type": "message",
                    "role": "developer",
                    "content": [{"type": "input_text", "text": "rules"}],
                },
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "go"}],
                },
                {"type": "reasoning", "summary": []},
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "shell",
                    "arguments": '{"command":["ls"]}',
                },
                {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
                {"type": "function_call_output", "call_id": "c2", "output": "b.txt"},
            ],
            "tools": [
                {"type": "function", "name": "shell", "parameters": {"type": "object"}},
                {"type": "web_search"},
            ],
            "max_output_tokens": 100,
        }
    )
    req = parsed.request
    assert req.system == "You are Codex.\n\nrules" and req.max_tokens == 100
    assert [m["role"] for m in req.messages] == ["user", "assistant", "tool", "tool"]
    assert [c["id"] for c in req.messages[1]["tool_calls"]] == ["c1", "c2"]  # one assistant turn
    assert req.messages[1]["tool_calls"][0]["arguments"] == {"command": ["ls"]}
    assert parsed.dropped == ("tool web_search",)


def test_gemini_cli_style_contents_pair_calls_and_responses() -> None:
    parsed = parse_gemini(
        {
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {
                    "role": "model",
                    "parts": [
                        {"text": "thinking...", "thought": True},
                        {"functionCall": {"name": "run", "args": {"c": "a"}}},
                        {"functionCall": {"name": "run", "args": {"c": "b"}}},
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"name": "run", "response": {"output": "A"}}},
                        {"functionResponse": {"name": "run", "response": {"x": 1, "y": 2}}},
                    ],
                },
            ],
            "tools": [
                {
                    "functionDeclarations": [
                        {
                            "name": "run",
                            "parameters": {
                                "type": "OBJECT",
                                "properties": {"c": {"type": "STRING"}},
                            },
                        }
                    ]
                },
                {"googleSearch": {}},
            ],
            "generationConfig": {"maxOutputTokens": 64, "temperature": 0.5},
        },
        "gemini-2.5-flash:streamGenerateContent",
    )
    req = parsed.request
    assert parsed.model == "gemini-2.5-flash" and parsed.stream
    assert (req.max_tokens, req.temperature) == (64, 0.5)
    calls = req.messages[1]["tool_calls"]
    assert req.messages[1]["content"] == ""  # the thought part is not forwarded
    assert [m["tool_call_id"] for m in req.messages[2:]] == [calls[0]["id"], calls[1]["id"]]
    assert req.messages[2]["content"] == "A" and req.messages[3]["content"] == '{"x": 1, "y": 2}'
    params = req.tools[0]["function"]["parameters"]
    assert params == {"type": "object", "properties": {"c": {"type": "string"}}}
    assert parsed.dropped == ("tool googleSearch",)


def test_opencode_style_chat_with_developer_and_parts() -> None:
    parsed = parse_openai_chat(
        {
            "model": "m",
            "messages": [
                {"role": "developer", "content": "sys"},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                },
            ],
            "max_completion_tokens": 7,
            "stop": "END",
        }
    )
    req = parsed.request
    assert req.system == "sys" and req.messages[0]["content"] == "ab"
    assert req.max_tokens == 7 and req.stop == ("END",)


@pytest.mark.parametrize(
    "body",
    [{"messages": [{"role": "user", "content": "x"}]}, {"model": "m", "messages": [{"role": "x"}]}],
)
def test_bad_requests_are_precise_errors(body: dict) -> None:
    with pytest.raises(DriverRequestError):
        parse_openai_chat(body)


def test_token_counting_side_calls(gateway: Gateway) -> None:
    body = {"model": "c", "messages": [{"role": "user", "content": "count these words please"}]}
    r = httpx.post(
        gateway.url + "/v1/messages/count_tokens", json=body, headers={"x-api-key": TOKEN}
    )
    assert r.status_code == 200 and r.json()["input_tokens"] > 0
    g = {"contents": [{"parts": [{"text": "count me"}]}]}
    r = httpx.post(gateway.url + "/v1beta/models/g:countTokens", json=g, params={"key": TOKEN})
    assert r.status_code == 200 and r.json()["totalTokens"] > 0
    r = httpx.post(gateway.url + "/v1beta/models/g:embedContent", json=g, params={"key": TOKEN})
    assert r.status_code == 404
    assert not gateway.log.path.exists()  # side calls are not driver calls
