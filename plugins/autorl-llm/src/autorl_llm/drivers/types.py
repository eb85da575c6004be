"""One chat request/response model shared by every driver backend, the gateway and cassettes.

Messages use one canonical, provider-neutral shape (close to OpenAI Chat Completions, which most
callers already speak); each backend converts it to its provider's wire format:

- ``{"role": "user" | "assistant", "content": str}``
- an assistant turn that called tools: ``{"role": "assistant", "content": str, "tool_calls":
  [{"id", "name", "arguments": {...}}]}`` (OpenAI's nested ``function`` form is accepted too)
- a tool result: ``{"role": "tool", "tool_call_id": str, "content": str}``
- ``{"role": "system", ...}`` messages are moved into :attr:`ChatRequest.system`.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from autorl.digest import json_digest, short
from autorl_llm.drivers.errors import DriverRequestError

ROLES = ("user", "assistant", "tool")
FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter", "error")
MAX_STOP_STRINGS = 16
MAX_STOP_CHARS = 256
"""Bounds on a request's stop strings. Every generated token is checked against each one (the
local drivers' stopping criterion), so an unbounded list (an 8 MiB body holds ~100,000) let one
request stall the driver an agent shares with nobody but the harness; vLLM takes 16 per request
as the grader's engine starts it, OpenAI 4 (its own 400 says so)."""


def _where(index: int) -> str:
    return f"messages[{index}]"


def _text_of(content: Any, where: str) -> str:
    """Flatten ``content`` (a string or a list of text parts) to a string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for j, part in enumerate(content):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and part.get("type") in ("text", "input_text"):
                parts.append(str(part.get("text", "")))
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise DriverRequestError(
                    f"{where}.content[{j}]: unsupported content part {kind!r}",
                    hint="drivers take text only: use a string or [{'type': 'text', 'text': ...}]",
                )
        return "".join(parts)
    raise DriverRequestError(
        f"{where}.content: expected a string or a list of text parts, got {type(content).__name__}"
    )


def new_call_id() -> str:
    """A tool-call id for an upstream that sends none (Gemini's ``functionCall`` has no id, an
    OpenAI-compatible server may leave it empty): unique within any conversation, so a CLI
    never sees two calls under one id (which made Claude Code and OpenHands drop or replace
    their later tool results and loop). A replayed cassette returns the recorded ids."""
    return f"call_{secrets.token_hex(6)}"


def merge_turns(turns: Iterable[tuple[str, list[Any]]], key: str) -> list[dict[str, Any]]:
    """``(role, parts)`` as provider turns ``{"role", key: parts}``: turns with no parts are
    dropped and consecutive ones of the same role merged (Anthropic and Gemini require
    alternating roles, and a tool result travels as a user turn)."""
    merged: list[dict[str, Any]] = []
    for role, parts in turns:
        if not parts:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1][key].extend(parts)
        else:
            merged.append({"role": role, key: parts})
    return merged


@dataclass(frozen=True)
class ToolCall:
    """A function call the model asked for; ``arguments`` is already parsed JSON."""

    id: str
    name: str
    arguments: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}

    @classmethod
    def parse(cls, data: Any, where: str) -> ToolCall:
        """Accept ``{"id", "name", "arguments"}`` or OpenAI's ``{"id", "function": {...}}``."""
        if not isinstance(data, Mapping):
            raise DriverRequestError(f"{where}: a tool call must be an object, got {data!r}")
        fn = data.get("function") if isinstance(data.get("function"), Mapping) else data
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise DriverRequestError(f"{where}: a tool call needs a non-empty 'name'")
        args = fn.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as exc:
                raise DriverRequestError(
                    f"{where}: arguments of tool call {name!r} are not valid JSON: {exc}"
                ) from exc
        if not isinstance(args, Mapping):
            raise DriverRequestError(f"{where}: arguments of tool call {name!r} must be an object")
        return cls(id=str(data.get("id") or f"call_{name}"), name=name, arguments=dict(args))


def _normalise_message(message: Any, index: int) -> dict[str, Any]:
    where = _where(index)
    if not isinstance(message, Mapping):
        raise DriverRequestError(
            f"{where}: expected an object with 'role' and 'content', got {type(message).__name__}"
        )
    role = message.get("role")
    if role not in ROLES:
        raise DriverRequestError(
            f"{where}: role {role!r} is not one of {', '.join(ROLES)} (or 'system')"
        )
    out: dict[str, Any] = {"role": role, "content": _text_of(message.get("content"), where)}
    if role == "assistant" and message.get("tool_calls"):
        calls = message["tool_calls"]
        if not isinstance(calls, list):
            raise DriverRequestError(f"{where}.tool_calls: expected a list")
        out["tool_calls"] = [
            ToolCall.parse(c, f"{where}.tool_calls[{j}]").to_dict() for j, c in enumerate(calls)
        ]
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise DriverRequestError(f"{where}: a tool message needs 'tool_call_id'")
        out["tool_call_id"] = call_id
        if message.get("name"):
            out["name"] = str(message["name"])
    return out


def _normalise_tool(tool: Any, index: int) -> dict[str, Any]:
    """Tools are OpenAI-style ``{"type": "function", "function": {name, description, parameters}}``;
    the bare ``{name, description, parameters}`` form is accepted and wrapped."""
    where = f"tools[{index}]"
    if not isinstance(tool, Mapping):
        raise DriverRequestError(f"{where}: expected an object, got {type(tool).__name__}")
    fn = tool.get("function", tool)
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
        raise DriverRequestError(
            f"{where}: a tool needs a 'name'",
            hint="use {'type': 'function', 'function': {'name', 'description', 'parameters'}}",
        )
    params = fn.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(params, Mapping):
        raise DriverRequestError(f"{where}: 'parameters' of {fn['name']!r} must be a JSON schema")
    return {
        "type": "function",
        "function": {
            "name": fn["name"],
            "description": str(fn.get("description", "")),
            "parameters": dict(params),
        },
    }


def _stop_strings(raw: Any) -> tuple[str, ...] | None:
    """``stop`` checked: a string or a list of at most :data:`MAX_STOP_STRINGS` non-empty
    strings of at most :data:`MAX_STOP_CHARS` characters; the error quotes none of them whole
    (an agent's input, bounded before it reaches a log)."""
    hint = (
        f"give at most {MAX_STOP_STRINGS} non-empty stop strings of at most "
        f"{MAX_STOP_CHARS} characters each"
    )
    if isinstance(raw, (bytes, Mapping)) or not isinstance(raw, (str, Sequence)):
        raise DriverRequestError(
            f"stop: expected a string or a list of strings, got {type(raw).__name__}", hint=hint
        )
    stop = (raw,) if isinstance(raw, str) else tuple(raw)
    if len(stop) > MAX_STOP_STRINGS:
        raise DriverRequestError(f"stop: {len(stop)} stop strings", hint=hint)
    for i, item in enumerate(stop):
        if not isinstance(item, str) or not item:
            raise DriverRequestError(
                f"stop[{i}]: expected a non-empty string, got {type(item).__name__}"
                + (" ''" if item == "" else ""),
                hint=hint,
            )
        if len(item) > MAX_STOP_CHARS:
            raise DriverRequestError(f"stop[{i}]: {len(item)} characters", hint=hint)
    return stop or None


@dataclass(frozen=True)
class ChatRequest:
    """What a caller asks any driver; validated and normalised on construction."""

    messages: tuple[dict[str, Any], ...]
    system: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    tools: tuple[dict[str, Any], ...] | None = None
    stop: tuple[str, ...] | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)
    """Caller's labels (purpose, run id...): logged, never sent, not part of the cassette key."""

    def __post_init__(self) -> None:
        if isinstance(self.messages, (str, bytes)) or not isinstance(self.messages, Sequence):
            raise DriverRequestError(
                f"messages: expected a list of {{'role', 'content'}} objects, got "
                f"{type(self.messages).__name__}"
            )
        system_parts = [self.system] if self.system else []
        messages = []
        for i, message in enumerate(self.messages):
            if isinstance(message, Mapping) and message.get("role") == "system":
                system_parts.append(_text_of(message.get("content"), _where(i)))
            else:
                messages.append(_normalise_message(message, i))
        if not messages:
            raise DriverRequestError(
                "messages: a chat request needs at least one user message",
                hint="pass messages=[{'role': 'user', 'content': '...'}]",
            )
        set_ = object.__setattr__
        set_(self, "messages", tuple(messages))
        set_(self, "system", "\n\n".join(p for p in system_parts if p) or None)
        if self.max_tokens is not None and (
            not isinstance(self.max_tokens, int) or self.max_tokens < 1
        ):
            raise DriverRequestError(
                f"max_tokens: expected a positive int, got {self.max_tokens!r}"
            )
        if self.temperature is not None:
            if not isinstance(self.temperature, (int, float)) or not 0 <= self.temperature <= 2:
                raise DriverRequestError(
                    f"temperature: expected a number in [0, 2], got {self.temperature!r}"
                )
            set_(self, "temperature", float(self.temperature))
        if self.tools is not None:
            if not isinstance(self.tools, Sequence):
                raise DriverRequestError("tools: expected a list of tool definitions")
            set_(
                self,
                "tools",
                tuple(_normalise_tool(t, i) for i, t in enumerate(self.tools)) or None,
            )
        if self.stop is not None:
            set_(self, "stop", _stop_strings(self.stop))
        if not isinstance(self.metadata, Mapping):
            raise DriverRequestError("metadata: expected an object")

    @classmethod
    def from_messages(cls, messages: Sequence[Mapping[str, Any]], **params: Any) -> ChatRequest:
        """Build a request from messages plus keyword parameters; unknown ones are an error."""
        allowed = {"system", "max_tokens", "temperature", "tools", "stop", "metadata"}
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise DriverRequestError(
                f"unknown chat parameter(s): {', '.join(unknown)}",
                hint=f"a chat request takes: {', '.join(sorted(allowed))}",
            )
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise DriverRequestError(
                f"messages: expected a list of {{'role', 'content'}} objects, got "
                f"{type(messages).__name__}"
            )
        return cls(messages=tuple(messages), **params)

    def to_dict(self, *, with_metadata: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "messages": [dict(m) for m in self.messages],
            "system": self.system,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "tools": [dict(t) for t in self.tools] if self.tools else None,
            "stop": list(self.stop) if self.stop else None,
        }
        if with_metadata:
            data["metadata"] = dict(self.metadata)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChatRequest:
        return cls(
            messages=tuple(data["messages"]),
            system=data.get("system"),
            max_tokens=data.get("max_tokens"),
            temperature=data.get("temperature"),
            tools=tuple(data["tools"]) if data.get("tools") else None,
            stop=tuple(data["stop"]) if data.get("stop") else None,
            metadata=dict(data.get("metadata") or {}),
        )

    def last_user_text(self) -> str:
        """The content of the last user message ('' when the last turns are tool results)."""
        for message in reversed(self.messages):
            if message["role"] == "user":
                return message["content"]
        return ""

    def all_text(self) -> str:
        """Everything the model reads, for token estimates: system, messages, tool schemas."""
        parts = [self.system or ""]
        for m in self.messages:
            parts.append(m["content"])
            parts.extend(json.dumps(c["arguments"]) for c in m.get("tool_calls", []))
        if self.tools:
            parts.append(json.dumps(list(self.tools), sort_keys=True))
        return "\n".join(p for p in parts if p)


def request_key(backend: str, model: str, request: ChatRequest) -> str:
    """A stable hash of (backend, model, request without metadata): the cassette's lookup key."""
    payload = {"backend": backend, "model": model, "request": request.to_dict(with_metadata=False)}
    return short(json_digest(payload), 24)


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(frozen=True)
class ChatResponse:
    """A driver's answer, the same for every backend."""

    text: str
    model: str
    backend: str
    usage: Usage = field(default_factory=Usage)
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    """One of :data:`FINISH_REASONS`; the provider's own value is kept in ``raw``."""
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempts: int = 1
    scripted: bool = False
    """True when no LLM answered (the ``scripted`` backend): reports must say so."""
    replayed: bool = False
    """True when the answer came from a cassette, not from the backend."""
    raw: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def driver(self) -> str:
        return f"{self.backend}/{self.model}"

    def with_(self, **changes: Any) -> ChatResponse:
        return replace(self, **changes)

    def to_dict(self, *, with_raw: bool = True) -> dict[str, Any]:
        data = {
            "text": self.text,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "finish_reason": self.finish_reason,
            "usage": self.usage.to_dict(),
            "cost_usd": self.cost_usd,
            "latency_s": self.latency_s,
            "attempts": self.attempts,
            "model": self.model,
            "backend": self.backend,
            "scripted": self.scripted,
            "replayed": self.replayed,
        }
        if with_raw:
            data["raw"] = self.raw
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChatResponse:
        usage = data.get("usage") or {}
        return cls(
            text=data.get("text", ""),
            model=data["model"],
            backend=data["backend"],
            usage=Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
            tool_calls=tuple(
                ToolCall.parse(c, f"tool_calls[{i}]")
                for i, c in enumerate(data.get("tool_calls", []))
            ),
            finish_reason=data.get("finish_reason", "stop"),
            cost_usd=float(data.get("cost_usd", 0.0)),
            latency_s=float(data.get("latency_s", 0.0)),
            attempts=int(data.get("attempts", 1)),
            scripted=bool(data.get("scripted", False)),
            replayed=bool(data.get("replayed", False)),
            raw=data.get("raw"),
        )

    def get(self, key: str, default: Any = None) -> Any:
        """Mapping-style read (``reply.get("text")``) for callers written against plain dicts."""
        return self.to_dict().get(key, default)

    def __getitem__(self, key: str) -> Any:
        data = self.to_dict()
        if key not in data:
            raise KeyError(key)
        return data[key]


@dataclass(frozen=True)
class ChatChunk:
    """One piece of a streamed answer; the last chunk carries the complete ``response``."""

    text: str = ""
    response: ChatResponse | None = None
