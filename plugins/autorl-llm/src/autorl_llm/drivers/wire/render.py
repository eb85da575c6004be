"""Render one answer in each provider's wire format, as JSON or as an SSE stream.

Shared by the fake provider (scripted answers for tests) and the gateway (real driver answers
relayed to agent CLIs), so both speak exactly the same event sequences: the ones each real
client accepted (see docs/gateway.md). A stream renderer consumes text pieces as they arrive and
then the final :class:`WireReply`, so the gateway can forward deltas without buffering the
answer.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

APIS = ("openai-chat", "openai-responses", "anthropic", "gemini")


@dataclass(frozen=True)
class WireCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class WireReply:
    """A provider-neutral answer: what every renderer needs, nothing more."""

    text: str = ""
    tool_calls: tuple[WireCall, ...] = ()
    finish_reason: str = "stop"
    """'stop', 'length' or 'tool_calls' (mapped to each provider's vocabulary)."""
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


Piece = str | WireReply
"""A stream is text pieces (str) followed by exactly one final :class:`WireReply`."""


def sse(data: Any, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data) if not isinstance(data, str) else data}\n\n"


def ident(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def pieces(text: str, n: int = 3) -> list[str]:
    """Split text into a few pieces so streaming clients see several deltas."""
    if not text:
        return []
    step = max(1, -(-len(text) // n))
    return [text[i : i + step] for i in range(0, len(text), step)]


def as_stream(reply: WireReply, n: int = 3) -> Iterator[Piece]:
    """A whole answer as a stream: a few text pieces, then the reply."""
    yield from pieces(reply.text, n)
    yield reply


def _split(stream: Iterable[Piece]) -> Iterator[tuple[str | None, WireReply | None]]:
    for item in stream:
        if isinstance(item, WireReply):
            yield None, item
            return
        if item:
            yield item, None


# errors ------------------------------------------------------------------------------------------


ERROR_TYPES: dict[int, tuple[str | None, str | None, str | None]] = {
    400: ("invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"),
    401: ("authentication_error", "authentication_error", "UNAUTHENTICATED"),
    403: ("permission_error", "permission_error", "PERMISSION_DENIED"),
    404: ("not_found_error", "not_found_error", "NOT_FOUND"),
    409: ("conflict_error", None, None),
    413: ("invalid_request_error", None, None),
    422: ("invalid_request_error", None, None),
    429: ("rate_limit_error", "rate_limit_error", "RESOURCE_EXHAUSTED"),
    529: (None, "overloaded_error", None),
}
"""Per status, the error type each provider's API and SDKs use: OpenAI's ``error.type``,
Anthropic's ``error.type``, Gemini's ``error.status``. A status not named for a provider is
``server_error``, ``api_error`` or ``UNAVAILABLE``."""


def error_body(api: str, status: int, message: str, kind: str | None = None) -> dict[str, Any]:
    """The error object each provider's clients parse; ``kind`` overrides the error type."""
    openai, anthropic, gemini = ERROR_TYPES.get(status, (None, None, None))
    if api == "anthropic":
        return {
            "type": "error",
            "error": {"type": kind or anthropic or "api_error", "message": message},
        }
    if api == "gemini":
        return {
            "error": {"code": status, "message": message, "status": kind or gemini or "UNAVAILABLE"}
        }
    return {
        "error": {"message": message, "type": kind or openai or "server_error", "code": str(status)}
    }


# OpenAI Chat Completions --------------------------------------------------------------------------


def chat_json(r: WireReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": r.text or None}
    if r.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in r.tool_calls
        ]
    return {
        "id": ident("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": r.model,
        "choices": [{"index": 0, "message": message, "finish_reason": r.finish_reason}],
        "usage": _chat_usage(r),
    }


def _chat_usage(r: WireReply) -> dict[str, int]:
    return {
        "prompt_tokens": r.input_tokens,
        "completion_tokens": r.output_tokens,
        "total_tokens": r.input_tokens + r.output_tokens,
    }


def chat_stream(model: str, stream: Iterable[Piece], include_usage: bool = False) -> Iterator[str]:
    base = {
        "id": ident("chatcmpl"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    for text, final in _split(stream):
        if text is not None:
            yield chunk({"content": text})
            continue
        assert final is not None
        for i, call in enumerate(final.tool_calls):
            head = {"index": i, "id": call.id, "type": "function"}
            yield chunk(
                {"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]}
            )
            yield chunk(
                {
                    "tool_calls": [
                        {"index": i, "function": {"arguments": json.dumps(call.arguments)}}
                    ]
                }
            )
        yield chunk({}, final.finish_reason)
        if include_usage:
            yield sse({**base, "choices": [], "usage": _chat_usage(final)})
    yield sse("[DONE]")


# OpenAI Responses ---------------------------------------------------------------------------------


def _responses_envelope(model: str, response_id: str) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "incomplete_details": None,
        "model": model,
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
    }


def _message_item(item_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _call_item(call: WireCall) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": ident("fc"),
        "call_id": call.id,
        "name": call.name,
        "arguments": json.dumps(call.arguments),
        "status": "completed",
    }


def _responses_final(
    envelope: dict[str, Any], output: list[dict[str, Any]], r: WireReply
) -> dict[str, Any]:
    incomplete = r.finish_reason == "length"
    return {
        **envelope,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "output": output,
        "usage": {
            "input_tokens": r.input_tokens,
            "output_tokens": r.output_tokens,
            "total_tokens": r.input_tokens + r.output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def responses_json(r: WireReply) -> dict[str, Any]:
    output = [_message_item(ident("msg"), r.text)] if r.text else []
    output += [_call_item(c) for c in r.tool_calls]
    return _responses_final(_responses_envelope(r.model, ident("resp")), output, r)


def responses_stream(model: str, stream: Iterable[Piece]) -> Iterator[str]:
    envelope = _responses_envelope(model, ident("resp"))
    seq = iter(range(1_000_000))

    def event(kind: str, **data: Any) -> str:
        return sse({"type": kind, "sequence_number": next(seq), **data}, kind)

    yield event("response.created", response=envelope)
    output: list[dict[str, Any]] = []
    message_id = ident("msg")
    text_parts: list[str] = []
    for text, final in _split(stream):
        if text is not None:
            if not text_parts:
                added = {**_message_item(message_id, ""), "status": "in_progress", "content": []}
                yield event("response.output_item.added", output_index=0, item=added)
                yield event(
                    "response.content_part.added",
                    item_id=message_id,
                    output_index=0,
                    content_index=0,
                    part={"type": "output_text", "text": "", "annotations": []},
                )
            text_parts.append(text)
            yield event(
                "response.output_text.delta",
                item_id=message_id,
                output_index=0,
                content_index=0,
                delta=text,
                logprobs=[],
            )
            continue
        assert final is not None
        if text_parts:
            item = _message_item(message_id, "".join(text_parts))
            where = {"item_id": message_id, "output_index": 0, "content_index": 0}
            yield event("response.output_text.done", **where, text=item["content"][0]["text"])
            yield event("response.content_part.done", **where, part=item["content"][0])
            output.append(item)
            yield event("response.output_item.done", output_index=0, item=item)
        for call in final.tool_calls:
            item = _call_item(call)
            index = len(output)
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress"},
            )
            output.append(item)
            yield event("response.output_item.done", output_index=index, item=item)
        yield event("response.completed", response=_responses_final(envelope, output, final))


# Anthropic Messages -------------------------------------------------------------------------------

ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def anthropic_json(r: WireReply) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": r.text}] if r.text else []
    content += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in r.tool_calls
    ]
    return {
        "id": ident("msg"),
        "type": "message",
        "role": "assistant",
        "model": r.model,
        "content": content,
        "stop_reason": ANTHROPIC_STOP.get(r.finish_reason, "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": r.input_tokens, "output_tokens": r.output_tokens},
    }


def anthropic_stream(model: str, stream: Iterable[Piece], input_tokens: int = 0) -> Iterator[str]:
    """``input_tokens``: known or estimated before the answer (message_start carries it)."""
    start = {
        "id": ident("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }
    yield sse({"type": "message_start", "message": start}, "message_start")
    index = 0
    text_open = False
    for text, final in _split(stream):
        if text is not None:
            if not text_open:
                block = {"type": "text", "text": ""}
                yield sse(
                    {"type": "content_block_start", "index": 0, "content_block": block},
                    "content_block_start",
                )
                text_open = True
            yield sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
                "content_block_delta",
            )
            continue
        assert final is not None
        if text_open:
            yield sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
            index = 1
        for call in final.tool_calls:
            block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
            yield sse(
                {"type": "content_block_start", "index": index, "content_block": block},
                "content_block_start",
            )
            partial = {"type": "input_json_delta", "partial_json": json.dumps(call.arguments)}
            yield sse(
                {"type": "content_block_delta", "index": index, "delta": partial},
                "content_block_delta",
            )
            yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
            index += 1
        stop = ANTHROPIC_STOP.get(final.finish_reason, "end_turn")
        yield sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {
                    "input_tokens": final.input_tokens,
                    "output_tokens": final.output_tokens,
                },
            },
            "message_delta",
        )
    yield sse({"type": "message_stop"}, "message_stop")


# Gemini generateContent ---------------------------------------------------------------------------

GEMINI_STOP = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP"}


def _gemini_parts(text: str, calls: Iterable[WireCall]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts += [{"functionCall": _gemini_call(c)} for c in calls]
    return parts


def _gemini_call(c: WireCall) -> dict[str, Any]:
    """Gemini's ``functionCall``; its optional ``id`` when there is one, so a client (Gemini
    CLI) answers under the gateway's id instead of inventing its own."""
    call: dict[str, Any] = {"name": c.name, "args": c.arguments}
    if c.id:
        call["id"] = c.id
    return call


def _gemini_final(r: WireReply, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": GEMINI_STOP.get(r.finish_reason, "STOP"),
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": r.input_tokens,
            "candidatesTokenCount": r.output_tokens,
            "totalTokenCount": r.input_tokens + r.output_tokens,
        },
        "modelVersion": r.model,
    }


def gemini_json(r: WireReply) -> dict[str, Any]:
    return _gemini_final(r, _gemini_parts(r.text, r.tool_calls))


def gemini_stream(model: str, stream: Iterable[Piece]) -> Iterator[str]:
    """Each text piece is an event; the last piece travels with the calls and the usage."""
    held: str | None = None
    for text, final in _split(stream):
        if text is not None:
            if held is not None:
                content = {"role": "model", "parts": [{"text": held}]}
                yield sse({"candidates": [{"content": content, "index": 0}], "modelVersion": model})
            held = text
            continue
        assert final is not None
        final = replace(final, model=final.model or model)
        yield sse(_gemini_final(final, _gemini_parts(held or "", final.tool_calls)))
