"""The ``anthropic`` driver: the Messages API through the official SDK.

The SDK's own retries are off (``max_retries=0``): the shared :class:`RetryPolicy` retries
(429, 529 overloaded, 5xx, dropped connections, timeouts), honouring ``retry-after``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator, Mapping
from typing import Any

from autorl_llm.drivers import BaseDriver, ChatChunk, ChatRequest, ChatResponse, ToolCall, Usage
from autorl_llm.drivers.env import credentials
from autorl_llm.drivers.errors import DriverConfigError
from autorl_llm.drivers.types import merge_turns

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def anthropic_messages(request: ChatRequest) -> list[dict[str, Any]]:
    """Canonical messages to Messages-API turns: tool calls become ``tool_use`` blocks, tool
    results ``tool_result`` blocks in a user turn; consecutive same-role turns are merged."""
    return merge_turns(map(_blocks, request.messages), "content")


def _blocks(m: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """One canonical message as a Messages-API role and its content blocks."""
    if m["role"] == "tool":
        return "user", [
            {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
        ]
    blocks = [{"type": "text", "text": m["content"]}] if m["content"] else []
    blocks += [
        {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]}
        for c in m.get("tool_calls", [])
    ]
    return m["role"], blocks


class AnthropicDriver(BaseDriver):
    """``anthropic/<model>``. Options: ``base_url``, ``env`` (mapping read instead of
    os.environ), ``default_max_tokens`` (the API requires max_tokens; default 4096), plus the
    retry options and ``prices``."""

    name = "anthropic"
    known_options = frozenset({"base_url", "env", "default_max_tokens"})

    def __init__(self, model: str, **options: Any) -> None:
        super().__init__(model, **options)
        self.default_max_tokens = options.get("default_max_tokens", 4096)
        if not isinstance(self.default_max_tokens, int) or self.default_max_tokens < 1:
            raise DriverConfigError(
                f"{self.driver_name}: default_max_tokens={self.default_max_tokens!r} must be a "
                "positive int"
            )
        key, self.base_url = credentials(
            self.driver_name,
            key_vars=("ANTHROPIC_API_KEY",),
            url_var="ANTHROPIC_BASE_URL",
            default_url="https://api.anthropic.com",
            env=options.get("env"),
            base_url=options.get("base_url"),
        )
        import anthropic

        self.client = anthropic.Anthropic(
            api_key=key, base_url=self.base_url, max_retries=0, timeout=self.policy.timeout_s
        )

    def _payload(self, request: ChatRequest) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": anthropic_messages(request),
            "max_tokens": request.max_tokens or self.default_max_tokens,
        }
        if request.system:
            payload["system"] = request.system
        if request.temperature is not None:
            temperature = min(request.temperature, 1.0)
            if _sdk_takes_temperature():
                payload["temperature"] = temperature
            else:  # anthropic SDK 2.x dropped the argument; the Messages API still takes it
                payload["extra_body"] = {"temperature": temperature}
        if request.stop:
            payload["stop_sequences"] = list(request.stop)
        if request.tools:
            payload["tools"] = [
                {
                    "name": t["function"]["name"],
                    "description": t["function"]["description"],
                    "input_schema": t["function"]["parameters"],
                }
                for t in request.tools
            ]
        return payload

    def _parse(self, data: Mapping[str, Any]) -> ChatResponse:
        texts, calls = [], []
        for block in data.get("content") or []:
            if block.get("type") == "text":
                texts.append(block.get("text", ""))
            elif block.get("type") == "tool_use":
                calls.append(
                    ToolCall(
                        id=block["id"], name=block["name"], arguments=dict(block.get("input") or {})
                    )
                )
        usage = data.get("usage") or {}
        n_in = sum(
            int(usage.get(k) or 0)
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        return ChatResponse(
            text="".join(texts),
            tool_calls=tuple(calls),
            finish_reason=STOP_REASONS.get(data.get("stop_reason") or "end_turn", "stop"),
            usage=Usage(n_in, int(usage.get("output_tokens") or 0)),
            model=self.model,
            backend=self.name,
            raw=dict(data),
        )

    def _send(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        message = self.client.messages.create(**self._payload(request), timeout=timeout_s)
        return self._parse(message.model_dump())

    def _send_stream(self, request: ChatRequest, timeout_s: float) -> Iterator[ChatChunk]:
        with self.client.messages.stream(**self._payload(request), timeout=timeout_s) as stream:
            for text in stream.text_stream:
                if text:
                    yield ChatChunk(text=text)
            final = stream.get_final_message()
        yield ChatChunk(response=self._parse(final.model_dump()))


@functools.cache
def _sdk_takes_temperature() -> bool:
    """Whether the installed SDK's ``messages.create`` has a ``temperature`` parameter."""
    from anthropic.resources.messages import Messages

    return "temperature" in inspect.signature(Messages.create).parameters
