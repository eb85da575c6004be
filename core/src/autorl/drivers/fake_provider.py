"""A local fake LLM provider for tests: real HTTP on 127.0.0.1, scripted behaviours.

It speaks the wire formats the drivers and the agent CLIs use (OpenAI Chat Completions and
Responses, Anthropic Messages, Gemini generateContent; each streamed and not) so tests exercise
the real SDKs and real sockets without a key or network. Each request takes the next queued
behaviour: an answer (text and/or tool calls), an HTTP error (optionally with Retry-After), or a
delay before either; then ``responder`` decides, then ``default``. Every request is kept in
:attr:`FakeProvider.requests` for assertions.

Imported lazily (FastAPI, uvicorn): ``from autorl.drivers.fake_provider import FakeProvider``::

    with FakeProvider() as fake:
        fake.enqueue(Fail(429, retry_after=0.1), Answer("hi"))
        client = openai.OpenAI(base_url=fake.openai_base_url, api_key="test")
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from autorl.drivers.usage import estimate_tokens
from autorl.errors import AutorlError

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


def _sse(data: Any, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data) if not isinstance(data, str) else data}\n\n"


def _error_body(api: str, fail: Fail) -> dict[str, Any]:
    if api == "anthropic":
        kind = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error"}
        return {
            "type": "error",
            "error": {"type": kind.get(fail.status, "api_error"), "message": fail.message},
        }
    if api == "gemini":
        return {"error": {"code": fail.status, "message": fail.message, "status": "UNAVAILABLE"}}
    return {"error": {"message": fail.message, "type": "fake_error", "code": str(fail.status)}}


def _pieces(text: str, n: int = 3) -> list[str]:
    """Split text into a few pieces so streaming clients see several deltas."""
    if not text:
        return []
    step = max(1, -(-len(text) // n))
    return [text[i : i + step] for i in range(0, len(text), step)]


def _ident(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


# -- OpenAI Chat Completions


def _chat_json(model: str, body: dict[str, Any], a: Answer) -> dict[str, Any]:
    n_in, n_out = _usage("openai-chat", body, a)
    message: dict[str, Any] = {"role": "assistant", "content": a.text or None}
    if a.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(args)},
            }
            for i, (n, args) in enumerate(a.tool_calls)
        ]
    return {
        "id": _ident("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(a)}],
        "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
    }


async def _chat_stream(model: str, body: dict[str, Any], a: Answer) -> AsyncIterator[str]:
    n_in, n_out = _usage("openai-chat", body, a)
    base = {
        "id": _ident("chatcmpl"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(a.text):
        yield chunk({"content": piece})
        await asyncio.sleep(0)
    for i, (name, args) in enumerate(a.tool_calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": i, "function": {"arguments": json.dumps(args)}}]})
    yield chunk({}, _finish(a))
    if (body.get("stream_options") or {}).get("include_usage"):
        yield _sse(
            {
                **base,
                "choices": [],
                "usage": {
                    "prompt_tokens": n_in,
                    "completion_tokens": n_out,
                    "total_tokens": n_in + n_out,
                },
            }
        )
    yield _sse("[DONE]")


# -- OpenAI Responses


def _responses_json(model: str, body: dict[str, Any], a: Answer) -> dict[str, Any]:
    n_in, n_out = _usage("openai-responses", body, a)
    output: list[dict[str, Any]] = []
    if a.text:
        output.append(
            {
                "type": "message",
                "id": _ident("msg"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": a.text, "annotations": []}],
            }
        )
    for i, (name, args) in enumerate(a.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": _ident("fc"),
                "call_id": f"call_{i}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        )
    incomplete = a.finish_reason == "length"
    return {
        "id": _ident("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": n_in,
            "output_tokens": n_out,
            "total_tokens": n_in + n_out,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


async def _responses_stream(model: str, body: dict[str, Any], a: Answer) -> AsyncIterator[str]:
    final = _responses_json(model, body, a)
    seq = iter(range(10_000))
    start = {**final, "status": "in_progress", "output": [], "usage": None}
    yield _sse(
        {"type": "response.created", "sequence_number": next(seq), "response": start},
        "response.created",
    )
    for index, item in enumerate(final["output"]):
        added = {**item, "status": "in_progress"}
        if item["type"] == "message":
            added["content"] = []
        yield _sse(
            {
                "type": "response.output_item.added",
                "sequence_number": next(seq),
                "output_index": index,
                "item": added,
            },
            "response.output_item.added",
        )
        if item["type"] == "message":
            for piece in _pieces(a.text):
                yield _sse(
                    {
                        "type": "response.output_text.delta",
                        "sequence_number": next(seq),
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": piece,
                        "logprobs": [],
                    },
                    "response.output_text.delta",
                )
                await asyncio.sleep(0)
        yield _sse(
            {
                "type": "response.output_item.done",
                "sequence_number": next(seq),
                "output_index": index,
                "item": item,
            },
            "response.output_item.done",
        )
    yield _sse(
        {"type": "response.completed", "sequence_number": next(seq), "response": final},
        "response.completed",
    )


# -- Anthropic Messages

_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def _anthropic_json(model: str, body: dict[str, Any], a: Answer) -> dict[str, Any]:
    n_in, n_out = _usage("anthropic", body, a)
    content: list[dict[str, Any]] = [{"type": "text", "text": a.text}] if a.text else []
    content += [
        {"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": args}
        for i, (n, args) in enumerate(a.tool_calls)
    ]
    return {
        "id": _ident("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _ANTHROPIC_STOP.get(_finish(a), "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": n_in, "output_tokens": n_out},
    }


async def _anthropic_stream(model: str, body: dict[str, Any], a: Answer) -> AsyncIterator[str]:
    final = _anthropic_json(model, body, a)
    start = {
        **final,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": final["usage"]["input_tokens"], "output_tokens": 1},
    }
    yield _sse({"type": "message_start", "message": start}, "message_start")
    for index, block in enumerate(final["content"]):
        if block["type"] == "text":
            yield _sse(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            )
            for piece in _pieces(block["text"]):
                yield _sse(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                    "content_block_delta",
                )
                await asyncio.sleep(0)
        else:
            yield _sse(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {**block, "input": {}},
                },
                "content_block_start",
            )
            yield _sse(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(block["input"]),
                    },
                },
                "content_block_delta",
            )
        yield _sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    yield _sse(
        {
            "type": "message_delta",
            "delta": {"stop_reason": final["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": final["usage"]["output_tokens"]},
        },
        "message_delta",
    )
    yield _sse({"type": "message_stop"}, "message_stop")


# -- Gemini generateContent

_GEMINI_STOP = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP"}


def _gemini_json(model: str, body: dict[str, Any], a: Answer) -> dict[str, Any]:
    n_in, n_out = _usage("gemini", body, a)
    parts: list[dict[str, Any]] = [{"text": a.text}] if a.text else []
    parts += [{"functionCall": {"name": n, "args": args}} for n, args in a.tool_calls]
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": _GEMINI_STOP.get(_finish(a), "STOP"),
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": n_in,
            "candidatesTokenCount": n_out,
            "totalTokenCount": n_in + n_out,
        },
        "modelVersion": model,
    }


async def _gemini_stream(model: str, body: dict[str, Any], a: Answer) -> AsyncIterator[str]:
    final = _gemini_json(model, body, a)
    pieces = _pieces(a.text)
    for piece in pieces[:-1]:
        yield _sse(
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}
                ],
                "modelVersion": model,
            }
        )
        await asyncio.sleep(0)
    last_parts = ([{"text": pieces[-1]}] if pieces else []) + [
        p for p in final["candidates"][0]["content"]["parts"] if "functionCall" in p
    ]
    yield _sse(
        {
            **final,
            "candidates": [
                {**final["candidates"][0], "content": {"role": "model", "parts": last_parts}}
            ],
        }
    )


RENDER = {
    "openai-chat": (_chat_json, _chat_stream),
    "openai-responses": (_responses_json, _responses_stream),
    "anthropic": (_anthropic_json, _anthropic_stream),
    "gemini": (_gemini_json, _gemini_stream),
}


class FakeProvider:
    """The fake provider's state and server; use as a context manager."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        default: Behaviour | None = None,
        responder: Callable[[ReceivedRequest], Behaviour | None] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.api_key = api_key
        """When set, requests must carry it (Bearer, x-api-key or x-goog-api-key), else 401."""
        self.default = default or Answer()
        self.responder = responder
        self.requests: list[ReceivedRequest] = []
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self.host = host
        self.port = 0
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
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
        render_json, render_stream = RENDER[api]
        if stream:
            return StreamingResponse(
                render_stream(model_name, body, behaviour), media_type="text/event-stream"
            )
        return JSONResponse(render_json(model_name, body, behaviour))

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
        import uvicorn

        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((self.host, 0))
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise AutorlError(f"the fake provider did not start on {self.host}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._stopping = True
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
