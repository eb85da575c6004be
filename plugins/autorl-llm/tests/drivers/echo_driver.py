"""A real in-process backend for the shared-layer tests: echoes, counts calls, can fail."""

from __future__ import annotations

from typing import Any

from autorl_llm.drivers import BaseDriver, ChatRequest, ChatResponse, TransientError, Usage


class EchoDriver(BaseDriver):
    name = "echo"
    known_options = frozenset({"fail_first"})

    def __init__(self, model: str, **options: Any) -> None:
        super().__init__(model, **options)
        self.calls = 0
        self.fail_first = int(options.get("fail_first", 0))

    def _send(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        self.calls += 1
        if self.calls <= self.fail_first:
            raise TransientError("server", "HTTP 500: warming up")
        text = f"echo #{self.calls}: {request.last_user_text()}"
        return ChatResponse(
            text=text, model=self.model, backend=self.name, usage=Usage(10, len(text.split()))
        )
