"""Read a request in any provider's wire format into the project's :class:`ChatRequest`.

The gateway uses this to accept whatever API an agent CLI speaks (OpenAI Chat Completions or
Responses, Anthropic Messages, Gemini generateContent) and forward it to any driver backend.
It is lenient where clients differ harmlessly: non-text content (images, documents) becomes a
short ``[image omitted]`` marker, reasoning/thinking items are dropped, and provider-hosted
tools (web search, code execution) are dropped and listed in :attr:`ParsedRequest.dropped`,
because a driver backend can only offer function tools.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autorl_llm.drivers.errors import DriverRequestError
from autorl_llm.drivers.types import ChatRequest

TEXT_TYPES = ("text", "input_text", "output_text")
SKIPPED_TYPES = ("thinking", "redacted_thinking", "reasoning")


@dataclass(frozen=True)
class ParsedRequest:
    api: str
    model: str
    stream: bool
    request: ChatRequest
    include_usage: bool = False
    """OpenAI chat: ``stream_options.include_usage`` (send a final usage chunk)."""
    dropped: tuple[str, ...] = field(default=())
    """What could not be forwarded (hosted tools...), for the call log."""


def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise DriverRequestError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DriverRequestError(f"{where}: expected a list, got {type(value).__name__}")
    return value


def flatten(content: Any) -> str:
    """A string, or a list of parts, as text; non-text parts become ``[<type> omitted]``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, list):
        return json.dumps(content)
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, Mapping):
            kind = part.get("type")
            if kind in TEXT_TYPES or (kind is None and "text" in part):
                out.append(str(part.get("text", "")))
            elif kind in SKIPPED_TYPES or part.get("thought"):
                continue
            else:
                out.append(f"[{kind or 'part'} omitted]")
    return "".join(out)


def _tool_label(tool: Any) -> str:
    """How a dropped (non-function) tool is named in the call log."""
    if isinstance(tool, Mapping):
        return f"tool {tool.get('type') or ','.join(sorted(map(str, tool)))}"
    return f"tool {tool!r}"


def _max_tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _stop(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,) if value else None
    if isinstance(value, list):
        return tuple(s for s in value if isinstance(s, str) and s) or None
    return None


def _function(name: Any, description: Any, parameters: Any) -> dict[str, Any]:
    """A function tool in the project's form (an empty object schema when none is given)."""
    return {
        "name": name,
        "description": description or "",
        "parameters": parameters or {"type": "object", "properties": {}},
    }


def _tools(
    body: Mapping[str, Any], accept: Callable[[Mapping[str, Any]], bool], schema: str | None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The request's function tools (those ``accept`` takes; with ``schema``, rewritten from
    their ``name``, ``description`` and ``schema`` key, else kept as they are) and the labels
    of the dropped ones."""
    tools, dropped = [], []
    for tool in _list(body.get("tools"), "tools"):
        if not (isinstance(tool, Mapping) and accept(tool)):
            dropped.append(_tool_label(tool))
        elif schema is None:
            tools.append(dict(tool))
        else:
            tools.append(_function(tool.get("name"), tool.get("description"), tool.get(schema)))
    return tools, dropped


def _append_turn(
    messages: list[dict[str, Any]],
    assistant: bool,
    texts: list[str],
    calls: list[dict[str, Any]],
    results: list[dict[str, Any]],
) -> None:
    """One turn of a block-based format (Anthropic, Gemini) as chat messages: an assistant
    message with its tool calls, or the tool results then the user's text (none when the turn
    held only results)."""
    text = "".join(texts)
    if assistant:
        out: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            out["tool_calls"] = calls
        messages.append(out)
        return
    messages.extend(results)
    if text or not results:
        messages.append({"role": "user", "content": text})


def _build(
    api: str,
    body: Mapping[str, Any],
    messages: list[dict[str, Any]],
    tools: tuple[list[dict[str, Any]], list[str]],
    *,
    model: Any = None,
    stream: bool | None = None,
    include_usage: bool = False,
    **params: Any,
) -> ParsedRequest:
    """The parsed request; ``model`` and ``stream`` default to the body's fields."""
    model = body.get("model") if model is None else model
    stream = bool(body.get("stream")) if stream is None else stream
    if not isinstance(model, str) or not model:
        raise DriverRequestError(f"{api} request: 'model' is missing")
    forwarded, dropped = tools
    request = ChatRequest(
        messages=tuple(messages),
        tools=tuple(forwarded) or None,
        metadata={"api": api, "client_model": model},
        **{k: v for k, v in params.items() if v is not None},
    )
    return ParsedRequest(api, model, stream, request, include_usage, tuple(dropped))


# OpenAI Chat Completions --------------------------------------------------------------------------


def parse_openai_chat(body: Mapping[str, Any]) -> ParsedRequest:
    messages: list[dict[str, Any]] = []
    for i, raw in enumerate(_list(body.get("messages"), "messages")):
        m = _obj(raw, f"messages[{i}]")
        role = m.get("role")
        if role in ("system", "developer"):
            messages.append({"role": "system", "content": flatten(m.get("content"))})
        elif role == "user":
            messages.append({"role": "user", "content": flatten(m.get("content"))})
        elif role == "assistant":
            out: dict[str, Any] = {"role": "assistant", "content": flatten(m.get("content"))}
            if m.get("tool_calls"):
                out["tool_calls"] = list(m["tool_calls"])
            messages.append(out)
        elif role == "tool":
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": m.get("tool_call_id"),
                    "content": flatten(m.get("content")),
                }
            )
        else:
            raise DriverRequestError(f"messages[{i}]: unsupported role {role!r}")
    return _build(
        "openai-chat",
        body,
        messages,
        _tools(body, lambda tool: tool.get("type", "function") == "function", None),
        include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
        max_tokens=_max_tokens(body.get("max_completion_tokens") or body.get("max_tokens")),
        temperature=body.get("temperature"),
        stop=_stop(body.get("stop")),
    )


# OpenAI Responses ---------------------------------------------------------------------------------


def _append_call(messages: list[dict[str, Any]], call: dict[str, Any]) -> None:
    """Consecutive function calls belong to one assistant turn."""
    if messages and messages[-1]["role"] == "assistant":
        messages[-1].setdefault("tool_calls", []).append(call)
    else:
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})


def parse_openai_responses(body: Mapping[str, Any]) -> ParsedRequest:
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": flatten(body["instructions"])})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for i, raw in enumerate(_list(items, "input")):
        item = _obj(raw, f"input[{i}]")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            role = "system" if role in ("system", "developer") else role
            if role not in ("system", "user", "assistant"):
                raise DriverRequestError(f"input[{i}]: unsupported role {role!r}")
            text = flatten(item.get("content"))
            if role == "assistant" and messages and messages[-1]["role"] == "assistant":
                messages[-1]["content"] += text
            else:
                messages.append({"role": role, "content": text})
        elif kind in ("function_call", "custom_tool_call"):
            args = item.get("arguments", "{}") if kind == "function_call" else None
            if kind == "custom_tool_call":
                args = {"input": item.get("input", "")}
            _append_call(
                messages,
                {
                    "id": item.get("call_id") or item.get("id"),
                    "name": item.get("name"),
                    "arguments": args,
                },
            )
        elif kind in ("function_call_output", "custom_tool_call_output"):
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id"),
                    "content": flatten(item.get("output")),
                }
            )
        elif kind in SKIPPED_TYPES:
            continue
        else:
            messages.append({"role": "user", "content": f"[{kind} omitted]"})

    return _build(
        "openai-responses",
        body,
        messages,
        _tools(body, lambda tool: tool.get("type") == "function", "parameters"),
        max_tokens=_max_tokens(body.get("max_output_tokens")),
        temperature=body.get("temperature"),
    )


# Anthropic Messages -------------------------------------------------------------------------------


def parse_anthropic(body: Mapping[str, Any]) -> ParsedRequest:
    messages: list[dict[str, Any]] = []
    if body.get("system"):
        messages.append({"role": "system", "content": flatten(body["system"])})
    for i, raw in enumerate(_list(body.get("messages"), "messages")):
        m = _obj(raw, f"messages[{i}]")
        role, content = m.get("role"), m.get("content")
        if role == "system":  # Claude Code puts system reminders among the messages
            messages.append({"role": "system", "content": flatten(content)})
            continue
        if role not in ("user", "assistant"):
            raise DriverRequestError(f"messages[{i}]: unsupported role {role!r}")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for block in _list(blocks, f"messages[{i}].content"):
            block = _obj(block, f"messages[{i}].content")
            kind = block.get("type")
            if kind == "tool_use":
                calls.append(
                    {
                        "id": block.get("id"),
                        "name": block.get("name"),
                        "arguments": block.get("input") or {},
                    }
                )
            elif kind == "tool_result":
                text = flatten(block.get("content"))
                if block.get("is_error"):
                    text = f"ERROR: {text}"
                results.append(
                    {"role": "tool", "tool_call_id": block.get("tool_use_id"), "content": text}
                )
            else:
                texts.append(flatten(block))
        _append_turn(messages, role == "assistant", texts, calls, results)

    return _build(
        "anthropic",
        body,
        messages,
        _tools(body, lambda tool: "input_schema" in tool, "input_schema"),
        max_tokens=_max_tokens(body.get("max_tokens")),
        temperature=body.get("temperature"),
        stop=_stop(body.get("stop_sequences")),
    )


# Gemini generateContent ---------------------------------------------------------------------------


def _lower_types(schema: Any) -> Any:
    """Gemini schemas may spell types in capitals (``OBJECT``); JSON Schema wants lower case."""
    if isinstance(schema, Mapping):
        return {
            k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v))
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def _function_output(response: Any) -> str:
    """Gemini wraps a tool's output in an object (``{"output": "..."}``): unwrap a lone string."""
    if isinstance(response, str):
        return response
    if isinstance(response, Mapping) and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return json.dumps(response, ensure_ascii=False)


def parse_gemini(body: Mapping[str, Any], model_action: str) -> ParsedRequest:
    """``model_action`` is the path's last segment, e.g. ``gemini-2.5-flash:generateContent``."""
    model, _, action = model_action.partition(":")
    messages: list[dict[str, Any]] = []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        messages.append(
            {"role": "system", "content": flatten(_obj(system, "systemInstruction").get("parts"))}
        )
    pending: dict[str, deque[str]] = defaultdict(deque)
    for i, raw in enumerate(_list(body.get("contents"), "contents")):
        turn = _obj(raw, f"contents[{i}]")
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for j, part in enumerate(_list(turn.get("parts"), f"contents[{i}].parts")):
            part = _obj(part, f"contents[{i}].parts[{j}]")
            if part.get("thought"):
                continue
            if "functionCall" in part:
                fc = _obj(part["functionCall"], f"contents[{i}].parts[{j}].functionCall")
                call_id = str(fc.get("id") or f"call_{i}_{j}_{fc.get('name')}")
                pending[str(fc.get("name"))].append(call_id)
                calls.append(
                    {"id": call_id, "name": fc.get("name"), "arguments": fc.get("args") or {}}
                )
            elif "functionResponse" in part:
                fr = _obj(part["functionResponse"], f"contents[{i}].parts[{j}].functionResponse")
                name = str(fr.get("name"))
                call_id = fr.get("id") or (pending[name].popleft() if pending[name] else name)
                text = _function_output(fr.get("response"))
                results.append({"role": "tool", "tool_call_id": str(call_id), "content": text})
            elif "text" in part:
                texts.append(str(part["text"]))
            else:
                texts.append(f"[{next(iter(part), 'part')} omitted]")
        _append_turn(messages, turn.get("role") == "model", texts, calls, results)
    tools, dropped = [], []
    for tool in _list(body.get("tools"), "tools"):
        decls = tool.get("functionDeclarations") if isinstance(tool, Mapping) else None
        if decls is None and isinstance(tool, Mapping):
            decls = tool.get("function_declarations")
        if not decls:
            dropped.append(_tool_label(tool))
            continue
        for decl in _list(decls, "tools.functionDeclarations"):
            decl = _obj(decl, "tools.functionDeclarations")
            params = decl.get("parametersJsonSchema") or decl.get("parameters")
            tools.append(_function(decl.get("name"), decl.get("description"), _lower_types(params)))
    config = body.get("generationConfig") or body.get("generation_config") or {}
    return _build(
        "gemini",
        body,
        messages,
        (tools, dropped),
        model=model,
        stream=action.startswith("stream"),
        max_tokens=_max_tokens(config.get("maxOutputTokens")),
        temperature=config.get("temperature"),
        stop=_stop(config.get("stopSequences")),
    )
