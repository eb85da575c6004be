"""The ``gemini`` driver: ``models/{model}:generateContent`` (and ``:streamGenerateContent``).

Plain httpx rather than the google-genai SDK: one request shape, no extra dependency, and the
shared retry policy sees the raw HTTP status and Retry-After.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
from autorl_llm.drivers import BaseDriver, ChatChunk, ChatRequest, ChatResponse, ToolCall, Usage
from autorl_llm.drivers.env import credentials
from autorl_llm.drivers.errors import DriverAPIError
from autorl_llm.drivers.retry import classify_status
from autorl_llm.drivers.types import merge_turns, new_call_id

FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "BLOCKLIST": "content_filter",
    "SPII": "content_filter",
}


def in_call_order(messages: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """The messages with each run of tool results in the order of the calls they answer.

    Gemini pairs a ``functionResponse`` with its ``functionCall`` by position and name, not by
    id; a CLI returns parallel results as they finish (Claude Code does), so two calls of one
    tool would get each other's results unless they are put back in call order.
    """
    out: list[dict[str, Any]] = []
    order: dict[str, int] = {}
    run: list[dict[str, Any]] = []
    for m in [*messages, {"role": "end"}]:
        if m["role"] == "tool":
            run.append(m)
            continue
        out += sorted(run, key=lambda r: order.get(r["tool_call_id"], len(order)))
        run = []
        if m["role"] == "assistant":
            order = {c["id"]: i for i, c in enumerate(m.get("tool_calls", []))}
        if m["role"] != "end":
            out.append(m)
    return out


def gemini_contents(request: ChatRequest) -> list[dict[str, Any]]:
    """Canonical messages to Gemini contents (roles user/model; tool results by function name)."""
    names = {c["id"]: c["name"] for m in request.messages for c in m.get("tool_calls", [])}

    def parts(m: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        if m["role"] == "tool":
            name = m.get("name") or names.get(m["tool_call_id"], m["tool_call_id"])
            return "user", [
                {"functionResponse": {"name": name, "response": {"content": m["content"]}}}
            ]
        found = [{"text": m["content"]}] if m["content"] else []
        found += [
            {"functionCall": {"name": c["name"], "args": c["arguments"]}}
            for c in m.get("tool_calls", [])
        ]
        return ("model" if m["role"] == "assistant" else "user"), found

    return merge_turns(map(parts, in_call_order(request.messages)), "parts")


class GeminiDriver(BaseDriver):
    """``gemini/<model>``. Options: ``base_url``, ``env``, ``api_version`` (default v1beta),
    plus the retry options and ``prices``."""

    name = "gemini"
    known_options = frozenset({"base_url", "env", "api_version"})

    def __init__(self, model: str, **options: Any) -> None:
        super().__init__(model, **options)
        self.key, self.base_url = credentials(
            self.driver_name,
            key_vars=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            url_var="GOOGLE_GEMINI_BASE_URL",
            default_url="https://generativelanguage.googleapis.com",
            env=options.get("env"),
            base_url=options.get("base_url"),
        )
        self.api_version = options.get("api_version", "v1beta")
        self.client = httpx.Client(headers={"x-goog-api-key": self.key or ""})

    def _url(self, action: str) -> str:
        return f"{self.base_url}/{self.api_version}/models/{self.model}:{action}"

    def _payload(self, request: ChatRequest) -> dict[str, Any]:
        payload: dict[str, Any] = {"contents": gemini_contents(request)}
        if request.system:
            payload["systemInstruction"] = {"parts": [{"text": request.system}]}
        config: dict[str, Any] = {}
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.stop:
            config["stopSequences"] = list(request.stop)
        if config:
            payload["generationConfig"] = config
        if request.tools:
            payload["tools"] = [
                {"functionDeclarations": [dict(t["function"]) for t in request.tools]}
            ]
        return payload

    def _check(self, response: httpx.Response) -> None:
        if response.status_code >= 400:
            response.read()
            raise classify_status(
                response.status_code, response.headers, response.text, self.driver_name
            )

    def _parse(
        self,
        data: Mapping[str, Any],
        texts: list[str] | None = None,
        calls: list[ToolCall] | None = None,
    ) -> ChatResponse:
        candidates = data.get("candidates") or []
        if not candidates and texts is None:
            feedback = data.get("promptFeedback") or {}
            raise DriverAPIError(f"{self.driver_name}: no candidates in the answer ({feedback})")
        candidate = candidates[0] if candidates else {}
        texts = list(texts or [])
        calls = list(calls or [])
        for part in (candidate.get("content") or {}).get("parts") or []:
            if "text" in part and not part.get("thought"):
                texts.append(part["text"])
            elif "functionCall" in part:
                fc = part["functionCall"]
                calls.append(
                    ToolCall(
                        id=fc.get("id") or new_call_id(),
                        name=fc["name"],
                        arguments=dict(fc.get("args") or {}),
                    )
                )
        usage = data.get("usageMetadata") or {}
        finish = FINISH.get(candidate.get("finishReason") or "STOP", "stop")
        if calls and finish == "stop":
            finish = "tool_calls"
        return ChatResponse(
            text="".join(texts),
            tool_calls=tuple(calls),
            finish_reason=finish,
            usage=Usage(
                int(usage.get("promptTokenCount") or 0),
                int(usage.get("candidatesTokenCount") or 0)
                + int(usage.get("thoughtsTokenCount") or 0),
            ),
            model=self.model,
            backend=self.name,
            raw=dict(data),
        )

    def _send(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        response = self.client.post(
            self._url("generateContent"), json=self._payload(request), timeout=timeout_s
        )
        self._check(response)
        return self._parse(response.json())

    def _send_stream(self, request: ChatRequest, timeout_s: float) -> Iterator[ChatChunk]:
        with self.client.stream(
            "POST",
            self._url("streamGenerateContent"),
            params={"alt": "sse"},
            json=self._payload(request),
            timeout=timeout_s,
        ) as response:
            self._check(response)
            texts: list[str] = []
            calls: list[ToolCall] = []
            last: dict[str, Any] = {}
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[5:].strip())
                piece = self._parse(event, [], [])
                if piece.text:
                    texts.append(piece.text)
                    yield ChatChunk(text=piece.text)
                calls.extend(piece.tool_calls)
                last = event
        final = self._parse(
            {
                **last,
                "candidates": [{**((last.get("candidates") or [{}])[0]), "content": {"parts": []}}],
            },
            texts,
            calls,
        )
        yield ChatChunk(response=final)
