"""Tool-call ids between the agent's CLI and the upstream: unique toward the CLI, the upstream's
own toward the upstream.

A CLI matches each tool result to its call by id. An upstream may send no id (Gemini), or the
same id on every turn (OpenAI-compatible servers that number calls per answer: ``call_0``);
then the CLI sees two calls under one id, drops or replaces its later results and loops. The
gateway therefore hands the CLI a fresh id whenever the upstream's is empty or was already
handed out in this run, and maps it back when the CLI sends the conversation again, so the
upstream always sees the ids it issued.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from autorl_llm.drivers.types import ChatRequest, ChatResponse, ToolCall, new_call_id


class CallIds:
    """One run's id map; thread-safe (requests of one run may overlap)."""

    def __init__(self) -> None:
        self._issued: set[str] = set()
        self._upstream_of: dict[str, str] = {}
        self._lock = threading.Lock()

    def to_client(self, response: ChatResponse) -> ChatResponse:
        """The response with every tool-call id unique among those the run handed out."""
        if not response.tool_calls:
            return response
        calls = []
        with self._lock:
            for call in response.tool_calls:
                ours = call.id
                if not ours or ours in self._issued:
                    ours = new_call_id()
                    while ours in self._issued:
                        ours = new_call_id()
                    if call.id:
                        self._upstream_of[ours] = call.id
                self._issued.add(ours)
                calls.append(ToolCall(ours, call.name, call.arguments) if ours != call.id else call)
        return replace(response, tool_calls=tuple(calls))

    def to_upstream(self, request: ChatRequest) -> ChatRequest:
        """The request with the ids the gateway made up replaced by the upstream's own."""
        with self._lock:
            mapping = dict(self._upstream_of)
        if not mapping:
            return request
        messages = [self._restore(m, mapping) for m in request.messages]
        if messages == list(request.messages):
            return request
        return replace(request, messages=tuple(messages))

    @staticmethod
    def _restore(message: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
        out = dict(message)
        if out.get("tool_calls"):
            out["tool_calls"] = [
                {**c, "id": mapping.get(c.get("id", ""), c.get("id"))} for c in out["tool_calls"]
            ]
        if out.get("tool_call_id") in mapping:
            out["tool_call_id"] = mapping[out["tool_call_id"]]
        return out
