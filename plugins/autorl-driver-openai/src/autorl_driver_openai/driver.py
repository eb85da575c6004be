"""The ``openai`` driver: Chat Completions (default) or Responses, through the official SDK.

The SDK's own retries are off (``max_retries=0``): the shared :class:`RetryPolicy` retries, so
every backend backs off the same way and attempts are counted in responses and the call log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from autorl_llm.drivers import BaseDriver, ChatChunk, ChatRequest, ChatResponse, ToolCall, Usage
from autorl_llm.drivers.env import credentials
from autorl_llm.drivers.errors import DriverAPIError, DriverConfigError, DriverRequestError
from autorl_llm.drivers.types import new_call_id

APIS = ("chat", "responses")
CHAT_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def _arguments(raw: str | None) -> dict[str, Any]:
    """Parse tool-call arguments; a model's broken JSON is kept, not lost."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {"_invalid_json": raw}
    return value if isinstance(value, dict) else {"_value": value}


def chat_messages(request: ChatRequest) -> list[dict[str, Any]]:
    """Canonical messages to Chat Completions messages."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for m in request.messages:
        if m["role"] == "assistant" and m.get("tool_calls"):
            out.append(
                {
                    "role": "assistant",
                    "content": m["content"] or None,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {
                                "name": c["name"],
                                "arguments": json.dumps(c["arguments"]),
                            },
                        }
                        for c in m["tool_calls"]
                    ],
                }
            )
        elif m["role"] == "tool":
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


def responses_input(request: ChatRequest) -> list[dict[str, Any]]:
    """Canonical messages to Responses input items."""
    items: list[dict[str, Any]] = []
    for m in request.messages:
        if m["role"] == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": m["tool_call_id"],
                    "output": m["content"],
                }
            )
            continue
        if m["content"] or not m.get("tool_calls"):
            items.append({"role": m["role"], "content": m["content"]})
        for c in m.get("tool_calls", []):
            items.append(
                {
                    "type": "function_call",
                    "call_id": c["id"],
                    "name": c["name"],
                    "arguments": json.dumps(c["arguments"]),
                }
            )
    return items


class OpenAIDriver(BaseDriver):
    """``openai/<model>``. Options: ``api`` ('chat' or 'responses'), ``base_url``, ``env``
    (mapping read instead of os.environ), ``max_tokens_param`` ('max_completion_tokens' or
    'max_tokens' for older OpenAI-compatible servers), ``extra_body`` (sent as is), plus the
    retry options and ``prices``."""

    name = "openai"
    known_options = frozenset({"api", "base_url", "env", "max_tokens_param", "extra_body"})
    key_vars: tuple[str, ...] = ("OPENAI_API_KEY",)
    url_var: str | None = "OPENAI_BASE_URL"
    default_url = "https://api.openai.com/v1"
    key_required = True

    def __init__(self, model: str, **options: Any) -> None:
        super().__init__(model, **options)
        self.api = options.get("api", "chat")
        if self.api not in APIS:
            raise DriverConfigError(
                f"{self.driver_name}: option api={self.api!r} is not one of {', '.join(APIS)}"
            )
        self.max_tokens_param = options.get("max_tokens_param", "max_completion_tokens")
        if self.max_tokens_param not in ("max_completion_tokens", "max_tokens"):
            raise DriverConfigError(
                f"{self.driver_name}: max_tokens_param={self.max_tokens_param!r} must be "
                "'max_completion_tokens' or 'max_tokens'"
            )
        self.extra_body = dict(options.get("extra_body") or {})
        key, self.base_url = credentials(
            self.driver_name,
            key_vars=self.key_vars,
            url_var=self.url_var,
            default_url=self.default_url,
            env=options.get("env"),
            base_url=options.get("base_url"),
            required=self.key_required,
        )
        import openai

        self.client = openai.OpenAI(
            api_key=key or "EMPTY",
            base_url=self.base_url,
            max_retries=0,
            timeout=self.policy.timeout_s,
        )

    # payloads ----------------------------------------------------------------------------------

    def _chat_payload(self, request: ChatRequest) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "messages": chat_messages(request)}
        if request.max_tokens is not None:
            payload[self.max_tokens_param] = request.max_tokens
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        if request.stop:
            payload["stop"] = list(request.stop)
        if request.tools:
            payload["tools"] = [dict(t) for t in request.tools]
        if self.extra_body:
            payload["extra_body"] = self.extra_body
        return payload

    def _responses_payload(self, request: ChatRequest) -> dict[str, Any]:
        if request.stop:
            raise DriverRequestError(
                f"{self.driver_name}: the Responses API has no stop sequences",
                hint="drop stop=..., or use the driver option api='chat'",
            )
        payload: dict[str, Any] = {
            "model": self.model,
            "input": responses_input(request),
            "store": False,
        }
        if request.system:
            payload["instructions"] = request.system
        if request.max_tokens is not None:
            payload["max_output_tokens"] = request.max_tokens
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        if request.tools:
            payload["tools"] = [{"type": "function", **t["function"]} for t in request.tools]
        if self.extra_body:
            payload["extra_body"] = self.extra_body
        return payload

    # parsing -----------------------------------------------------------------------------------

    def _response(
        self, text: str, calls: list[ToolCall], finish: str, usage: Usage, raw: dict[str, Any]
    ) -> ChatResponse:
        return ChatResponse(
            text=text,
            tool_calls=tuple(calls),
            finish_reason=finish,
            usage=usage,
            model=self.model,
            backend=self.name,
            raw=raw,
        )

    def _parse_chat(self, data: Mapping[str, Any]) -> ChatResponse:
        choices = data.get("choices") or []
        if not choices:
            raise DriverAPIError(f"{self.driver_name}: the answer has no choices: {data!r:.300}")
        choice = choices[0]
        message = choice.get("message") or {}
        calls = [
            ToolCall(
                id=c.get("id") or new_call_id(),
                name=c["function"]["name"],
                arguments=_arguments(c["function"].get("arguments")),
            )
            for i, c in enumerate(message.get("tool_calls") or [])
        ]
        usage = data.get("usage") or {}
        return self._response(
            message.get("content") or "",
            calls,
            CHAT_FINISH.get(choice.get("finish_reason") or "stop", "stop"),
            Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
            dict(data),
        )

    def _parse_responses(self, data: Mapping[str, Any]) -> ChatResponse:
        if data.get("status") == "failed":
            error = data.get("error") or {}
            raise DriverAPIError(f"{self.driver_name}: the response failed: {error!r:.300}")
        texts, calls = [], []
        for item in data.get("output") or []:
            if item.get("type") == "message":
                texts += [
                    c.get("text", "")
                    for c in item.get("content") or []
                    if c.get("type") == "output_text"
                ]
            elif item.get("type") == "function_call":
                calls.append(
                    ToolCall(
                        id=item.get("call_id") or item.get("id") or "call",
                        name=item["name"],
                        arguments=_arguments(item.get("arguments")),
                    )
                )
        reason = (data.get("incomplete_details") or {}).get("reason")
        if data.get("status") == "incomplete":
            finish = "length" if reason == "max_output_tokens" else "content_filter"
        else:
            finish = "tool_calls" if calls else "stop"
        usage = data.get("usage") or {}
        return self._response(
            "".join(texts),
            calls,
            finish,
            Usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)),
            dict(data),
        )

    # sending -----------------------------------------------------------------------------------

    def _send(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        if self.api == "responses":
            result = self.client.responses.create(
                **self._responses_payload(request), timeout=timeout_s
            )
            return self._parse_responses(result.model_dump())
        result = self.client.chat.completions.create(
            **self._chat_payload(request), timeout=timeout_s
        )
        return self._parse_chat(result.model_dump())

    def _send_stream(self, request: ChatRequest, timeout_s: float) -> Iterator[ChatChunk]:
        if self.api == "responses":
            yield from self._stream_responses(request, timeout_s)
            return
        stream = self.client.chat.completions.create(
            **self._chat_payload(request),
            stream=True,
            stream_options={"include_usage": True},
            timeout=timeout_s,
        )
        texts: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish, usage = "stop", Usage()
        with stream:
            for chunk in stream:
                data = chunk.model_dump()
                if data.get("usage"):
                    u = data["usage"]
                    usage = Usage(
                        int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)
                    )
                for choice in data.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        texts.append(delta["content"])
                        yield ChatChunk(text=delta["content"])
                    for tc in delta.get("tool_calls") or []:
                        slot = calls.setdefault(
                            tc.get("index", 0), {"id": "", "name": "", "args": ""}
                        )
                        fn = tc.get("function") or {}
                        slot["id"] = tc.get("id") or slot["id"]
                        slot["name"] += fn.get("name") or ""
                        slot["args"] += fn.get("arguments") or ""
                    if choice.get("finish_reason"):
                        finish = CHAT_FINISH.get(choice["finish_reason"], "stop")
        tool_calls = [
            ToolCall(id=c["id"] or new_call_id(), name=c["name"], arguments=_arguments(c["args"]))
            for i, c in sorted(calls.items())
        ]
        yield ChatChunk(
            response=self._response("".join(texts), tool_calls, finish, usage, {"streamed": True})
        )

    def _stream_responses(self, request: ChatRequest, timeout_s: float) -> Iterator[ChatChunk]:
        stream = self.client.responses.create(
            **self._responses_payload(request), stream=True, timeout=timeout_s
        )
        final: dict[str, Any] | None = None
        with stream:
            for event in stream:
                data = event.model_dump()
                kind = data.get("type")
                if kind == "response.output_text.delta" and data.get("delta"):
                    yield ChatChunk(text=data["delta"])
                elif kind in ("response.completed", "response.incomplete", "response.failed"):
                    final = data.get("response") or {}
                elif kind == "error":
                    raise DriverAPIError(f"{self.driver_name}: stream error: {data!r:.300}")
        if final is None:
            raise DriverAPIError(f"{self.driver_name}: the stream ended without a final response")
        yield ChatChunk(response=self._parse_responses(final))
