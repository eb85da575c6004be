"""Shared pieces of the gateway tests: the run token, the shell tool and a scripted driver."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from autorl_llm.drivers import BaseDriver, ChatChunk, ChatRequest, ChatResponse, Usage, open_driver

TOKEN = "run-token-abc"

SHELL_TOOL = {
    "name": "shell",
    "description": "Run a shell command in the workspace.",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}

# replies_by: turn -> the reply index is the number of assistant turns already in the request, so
# a stateless client conversation (call, tool result, answer) gets the same replies every time.
TOOL_SCRIPT = {
    "replies_by": "turn",
    "replies": [
        {"text": "Let me look.", "tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]},
        "The workspace holds data and models.",
    ],
    "when_exhausted": "repeat_last",
}


def scripted(script: dict[str, Any] | None = None) -> Any:
    return open_driver("scripted/test-script", script=script or TOOL_SCRIPT)


class SlowStreamDriver(BaseDriver):
    """A real in-process backend that streams one word every 0.1 s (100 words)."""

    name = "slow"

    def _send(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        text = "word " * 100
        return ChatResponse(text=text, model=self.model, backend=self.name, usage=Usage(10, 100))

    def _send_stream(self, request: ChatRequest, timeout_s: float) -> Iterator[ChatChunk]:
        response = self._send(request, timeout_s)
        for piece in response.text.split(" ")[:-1]:
            time.sleep(0.1)
            yield ChatChunk(text=piece + " ")
        yield ChatChunk(response=response)
