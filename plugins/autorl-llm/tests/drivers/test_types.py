"""The shared request/response model: validation, normalisation, stable keys, pricing."""

from __future__ import annotations

import pytest
from autorl_llm.drivers import ChatRequest, ChatResponse, Usage, cost_usd, price_of, request_key
from autorl_llm.drivers.errors import DriverRequestError


def test_system_messages_move_to_system_and_tools_are_wrapped() -> None:
    req = ChatRequest.from_messages(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "hi "}, "there"]},
        ],
        system="You judge.",
        tools=[{"name": "bash", "parameters": {"type": "object"}}],
        stop="\n\n",
    )
    assert req.system == "You judge.\n\nBe brief."
    assert req.messages == ({"role": "user", "content": "hi there"},)
    assert req.tools[0] == {
        "type": "function",
        "function": {"name": "bash", "description": "", "parameters": {"type": "object"}},
    }
    assert req.stop == ("\n\n",)


def test_openai_style_tool_calls_are_parsed() -> None:
    req = ChatRequest.from_messages(
        [
            {"role": "user", "content": "list"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "ls", "arguments": '{"a": 1}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "x.py"},
        ]
    )
    assert req.messages[1]["tool_calls"] == [{"id": "c1", "name": "ls", "arguments": {"a": 1}}]
    assert req.last_user_text() == "list"


@pytest.mark.parametrize(
    ("messages", "params", "needle"),
    [
        ([], {}, "at least one user message"),
        ("hello", {}, "expected a list"),
        ([{"role": "bot", "content": "x"}], {}, "messages[0]: role 'bot'"),
        ([{"role": "user", "content": 3}], {}, "messages[0].content"),
        ([{"role": "user", "content": [{"type": "image_url"}]}], {}, "content[0]: unsupported"),
        ([{"role": "tool", "content": "x"}], {}, "tool_call_id"),
        ([{"role": "user", "content": "x"}], {"max_tokens": 0}, "max_tokens"),
        ([{"role": "user", "content": "x"}], {"temperature": 3}, "temperature"),
        ([{"role": "user", "content": "x"}], {"top_k": 3}, "unknown chat parameter(s): top_k"),
        ([{"role": "user", "content": "x"}], {"tools": [{"description": "no name"}]}, "tools[0]"),
        ([{"role": "user", "content": "x"}], {"stop": ["a"] * 17}, "17 stop strings"),
        ([{"role": "user", "content": "x"}], {"stop": ["a", ""]}, "stop[1]: expected a non-empty"),
        ([{"role": "user", "content": "x"}], {"stop": ["a" * 257]}, "stop[0]: 257 characters"),
        ([{"role": "user", "content": "x"}], {"stop": {"a": 1}}, "stop: expected a string or"),
    ],
)
def test_bad_requests_say_where(messages: object, params: dict, needle: str) -> None:
    with pytest.raises(DriverRequestError) as err:
        ChatRequest.from_messages(messages, **params)  # type: ignore[arg-type]
    assert needle in str(err.value)


def test_request_key_is_stable_and_ignores_metadata() -> None:
    a = ChatRequest.from_messages([{"role": "user", "content": "q"}], metadata={"purpose": "judge"})
    b = ChatRequest.from_messages([{"role": "user", "content": "q"}])
    c = ChatRequest.from_messages([{"role": "user", "content": "q"}], temperature=0.5)
    assert request_key("openai", "gpt-5.2", a) == request_key("openai", "gpt-5.2", b)
    assert request_key("openai", "gpt-5.2", a) != request_key("openai", "gpt-5.2", c)
    assert request_key("openai", "gpt-5.2", a) != request_key("anthropic", "gpt-5.2", a)
    # stable across processes and versions: cassettes recorded today must replay tomorrow
    assert request_key("openai", "gpt-5.2", b) == "cba455dae48a0ec7ad8a3238"
    assert (
        request_key("openai", "gpt-5.2", ChatRequest.from_dict(b.to_dict()))
        == "cba455dae48a0ec7ad8a3238"
    )


def test_response_round_trips_and_reads_like_a_mapping() -> None:
    r = ChatResponse(text="hi", model="m", backend="b", usage=Usage(3, 4), cost_usd=0.5)
    assert ChatResponse.from_dict(r.to_dict()) == r
    assert r.get("text") == "hi" and r["usage"] == {"input_tokens": 3, "output_tokens": 4}
    assert r.driver == "b/m"


def test_prices_match_families_and_unknown_models_cost_nothing() -> None:
    assert price_of("claude-sonnet-4-5-20250929") == (3.0, 15.0)
    assert price_of("gpt-4o-mini-2024-07-18") == (0.15, 0.60)
    assert price_of("Qwen/Qwen3-32B") is None
    assert cost_usd("gpt-4o", Usage(1_000_000, 100_000)) == pytest.approx(3.5)
    assert cost_usd("Qwen/Qwen3-32B", Usage(10**6, 10**6)) == 0.0
    assert cost_usd("local", Usage(10**6, 0), prices=(1.0, 2.0)) == pytest.approx(1.0)
