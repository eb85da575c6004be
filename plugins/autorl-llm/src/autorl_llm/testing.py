"""A local fake LLM provider for tests: real HTTP on 127.0.0.1, scripted behaviours.

It speaks the wire formats the drivers and the agent CLIs use (OpenAI Chat Completions and
Responses, Anthropic Messages, Gemini generateContent; each streamed and not) so tests exercise
the real SDKs and real sockets without a key or network. Each request takes the next queued
behaviour: an answer (text and/or tool calls), an HTTP error (optionally with Retry-After), or a
delay before either; then ``responder`` decides, then ``default``. Every request is kept in
:attr:`FakeProvider.requests` for assertions.

Imported lazily (FastAPI, uvicorn): ``from autorl_llm.testing import FakeProvider``::

    with FakeProvider() as fake:
        fake.enqueue(Fail(429, retry_after=0.1), Answer("hi"))
        client = openai.OpenAI(base_url=fake.openai_base_url, api_key="test")
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from autorl_serving import Served, ThreadedServer
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from autorl_llm.drivers.usage import estimate_tokens
from autorl_llm.drivers.wire import render

# behaviours ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """A successful reply; token counts default to estimates of the request and the answer."""

    text: str = "ok"
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    """(name, arguments) pairs."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    """Override: 'stop', 'length' or 'tool_calls' (mapped to each provider's vocabulary)."""


@dataclass(frozen=True)
class Fail:
    """An HTTP error in the provider's error format."""

    status: int = 500
    retry_after: float | None = None
    message: str = "scripted failure"


@dataclass(frozen=True)
class Delay:
    """Wait ``seconds`` before behaving as ``then`` (longer than a client timeout: a timeout)."""

    seconds: float
    then: Answer | Fail = field(default_factory=Answer)


Behaviour = Answer | Fail | Delay


@dataclass
class ReceivedRequest:
    api: str
    """'openai-chat', 'openai-responses', 'anthropic' or 'gemini'."""
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    model: str
    stream: bool
    behaviour: str = ""


# the app ----------------------------------------------------------------------------------------


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _input_tokens(api: str, body: dict[str, Any]) -> int:
    keys = {
        "openai-chat": ("messages", "tools"),
        "openai-responses": ("instructions", "input", "tools"),
        "anthropic": ("system", "messages", "tools"),
        "gemini": ("systemInstruction", "contents", "tools"),
    }[api]
    return estimate_tokens(" ".join(s for k in keys for s in _strings(body.get(k))))


def _usage(api: str, body: dict[str, Any], answer: Answer) -> tuple[int, int]:
    out_text = answer.text + "".join(n + json.dumps(a) for n, a in answer.tool_calls)
    n_in = answer.input_tokens if answer.input_tokens is not None else _input_tokens(api, body)
    n_out = answer.output_tokens if answer.output_tokens is not None else estimate_tokens(out_text)
    return n_in, n_out


def _finish(answer: Answer) -> str:
    return answer.finish_reason or ("tool_calls" if answer.tool_calls else "stop")


def _error_body(api: str, fail: Fail) -> dict[str, Any]:
    return render.error_body(api, fail.status, fail.message)


ID_MODES = ("numbered", "unique", "none")


def _call_id(api: str, mode: str, i: int) -> str:
    """A tool-call id as a provider spells it: ``numbered`` per answer (``call_0``, as some
    OpenAI-compatible servers do: repeated across turns), ``unique`` (OpenAI, Anthropic) or
    ``none`` (empty). Gemini sends none unless ``unique`` (its newer models' optional id)."""
    prefix = "toolu" if api == "anthropic" else "call"
    if mode == "none" or (api == "gemini" and mode == "numbered"):
        return ""
    return f"{prefix}_{secrets.token_hex(8)}" if mode == "unique" else f"{prefix}_{i}"


def _reply(
    api: str, model: str, body: dict[str, Any], a: Answer, ids: str = "numbered"
) -> render.WireReply:
    """A scripted answer as the shared renderers' reply (call ids as each provider spells them)."""
    n_in, n_out = _usage(api, body, a)
    return render.WireReply(
        text=a.text,
        tool_calls=tuple(
            render.WireCall(_call_id(api, ids, i), name, args)
            for i, (name, args) in enumerate(a.tool_calls)
        ),
        finish_reason=_finish(a),
        input_tokens=n_in,
        output_tokens=n_out,
        model=model,
    )


def _render_json(api: str, reply: render.WireReply) -> dict[str, Any]:
    return {
        "openai-chat": render.chat_json,
        "openai-responses": render.responses_json,
        "anthropic": render.anthropic_json,
        "gemini": render.gemini_json,
    }[api](reply)


def _render_stream(api: str, body: dict[str, Any], reply: render.WireReply) -> Iterator[str]:
    stream = render.as_stream(reply)
    if api == "openai-chat":
        include = bool((body.get("stream_options") or {}).get("include_usage"))
        return render.chat_stream(reply.model, stream, include_usage=include)
    if api == "openai-responses":
        return render.responses_stream(reply.model, stream)
    if api == "anthropic":
        return render.anthropic_stream(reply.model, stream, input_tokens=reply.input_tokens)
    return render.gemini_stream(reply.model, stream)


class FakeProvider(Served):
    """The fake provider's state and server; use as a context manager."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        default: Behaviour | None = None,
        responder: Callable[[ReceivedRequest], Behaviour | None] | None = None,
        host: str = "127.0.0.1",
        ids: str = "numbered",
    ) -> None:
        if ids not in ID_MODES:
            raise ValueError(f"ids={ids!r}: expected one of {', '.join(ID_MODES)}")
        self.ids = ids
        """How tool-call ids are spelt (see ``_call_id``); Gemini's format never carries one."""
        self.issued_ids: list[str] = []
        """Every tool-call id sent, in order (what a client must send back)."""
        self.api_key = api_key
        """When set, requests must carry it (Bearer, x-api-key or x-goog-api-key), else 401."""
        self.default = default or Answer()
        self.responder = responder
        self.requests: list[ReceivedRequest] = []
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self.host = host
        self._stopping = False
        self.app = self._build_app()

    # scripting -----------------------------------------------------------------------------

    def enqueue(self, *behaviours: Behaviour) -> FakeProvider:
        with self._lock:
            self._queue.extend(behaviours)
        return self

    def _next(self, received: ReceivedRequest) -> Behaviour:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        found = self.responder(received) if self.responder else None
        return found or self.default

    # urls ----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def gemini_base_url(self) -> str:
        return self.url

    # app -----------------------------------------------------------------------------------

    def _authorised(self, request: Request) -> bool:
        if self.api_key is None:
            return True
        given = {
            request.headers.get("authorization", "").removeprefix("Bearer ").strip(),
            request.headers.get("x-api-key", ""),
            request.headers.get("x-goog-api-key", ""),
            request.query_params.get("key", ""),
        }
        return self.api_key in given

    async def _handle(self, api: str, request: Request, model: str | None = None) -> Response:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return JSONResponse({"error": {"message": "body is not JSON"}}, status_code=400)
        stream = bool(body.get("stream")) if api != "gemini" else bool(model and "stream" in model)
        model_name = body.get("model", "")
        if api == "gemini" and model:
            model_name = model.split(":", 1)[0]
        received = ReceivedRequest(
            api=api,
            path=request.url.path,
            headers=dict(request.headers),
            body=body,
            model=model_name,
            stream=stream,
        )
        self.requests.append(received)
        if not self._authorised(request):
            return JSONResponse(_error_body(api, Fail(401, message="invalid api key")), 401)
        behaviour = self._next(received)
        received.behaviour = type(behaviour).__name__
        if isinstance(behaviour, Delay):
            # sleep in steps so stopping the server never waits for (or cancels) a long delay
            until = time.monotonic() + behaviour.seconds
            while time.monotonic() < until and not self._stopping:
                await asyncio.sleep(min(0.05, until - time.monotonic()))
            behaviour = (
                Fail(503, message="fake provider stopping") if self._stopping else (behaviour.then)
            )
        if isinstance(behaviour, Fail):
            headers = {}
            if behaviour.retry_after is not None:
                headers["retry-after"] = f"{behaviour.retry_after:g}"
            return JSONResponse(_error_body(api, behaviour), behaviour.status, headers=headers)
        reply = _reply(api, model_name, body, behaviour, self.ids)
        self.issued_ids.extend(c.id for c in reply.tool_calls if c.id)
        if stream:
            return StreamingResponse(
                _render_stream(api, body, reply), media_type="text/event-stream"
            )
        return JSONResponse(_render_json(api, reply))

    def _build_app(self) -> FastAPI:
        app = FastAPI(title="autorl fake provider")

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Response:
            return await self._handle("openai-chat", request)

        @app.post("/v1/responses")
        async def responses(request: Request) -> Response:
            return await self._handle("openai-responses", request)

        @app.post("/v1/messages")
        async def messages(request: Request) -> Response:
            return await self._handle("anthropic", request)

        @app.post("/{version}/models/{model_action}")
        async def gemini(version: str, model_action: str, request: Request) -> Response:
            return await self._handle("gemini", request, model=model_action)

        return app

    # server --------------------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> FakeProvider:
        return self._serve(ThreadedServer(self.app, what="fake provider", host=self.host), timeout)

    def stop(self) -> None:
        self._stopping = True
        super().stop()
