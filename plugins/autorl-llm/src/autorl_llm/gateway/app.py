"""The gateway's HTTP face: the providers' paths, the run token, errors in each API's format.

Paths (the same the fake provider serves, and what the agent CLIs call):

- OpenAI: ``POST /v1/chat/completions``, ``POST /v1/responses``, ``GET /v1/models``
- Anthropic: ``POST /v1/messages`` (``?beta=true`` accepted), ``POST /v1/messages/count_tokens``
- Gemini: ``POST /v1beta/models/{model}:generateContent``, ``:streamGenerateContent`` and
  ``:countTokens``, ``GET /v1beta/models``
- autorl: ``GET /autorl/budget`` (the run's driver spend and limits), ``GET /health``

Every request is the agent's and may be hostile: a body over ``max_body_bytes`` (8 MiB by
default) is answered 413 before it is read in full, a malformed one 400, both in the API's own
error format; an unexpected exception is a 500 and one rate-limited log line, never a traceback
on the harness's terminal (``autorl_serving``).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

from autorl_serving import BodyLimit, ContainErrors
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from autorl_llm.drivers.errors import DriverAPIError, DriverError, DriverRequestError
from autorl_llm.drivers.usage import estimate_tokens
from autorl_llm.drivers.wire import parse, render
from autorl_llm.drivers.wire.parse import ParsedRequest
from autorl_llm.gateway.service import BudgetRefused, GatewayService

MAX_BODY_BYTES = 8 * 1024 * 1024
"""8 MiB: about two million tokens of text, past every model's context window (a 1M-token
conversation is about 4 MB of JSON); images sent inline count too. Anthropic's own cap is 32 MB,
but every byte accepted here is also written to the run's call log."""

NO_RETRY = {"x-should-retry": "false"}
"""Honoured by the OpenAI and Anthropic SDKs: a spent budget is final, retrying only wastes time."""


def _token_of(request: Request) -> str:
    auth = request.headers.get("authorization", "")
    return (
        auth.removeprefix("Bearer ").strip()
        or request.headers.get("x-api-key", "")
        or request.headers.get("x-goog-api-key", "")
        or request.query_params.get("key", "")
    )


def _error(api: str, status: int, message: str, kind: str | None = None) -> JSONResponse:
    headers = NO_RETRY if status in (400, 401, 403, 404, 413, 429) else {}
    return JSONResponse(render.error_body(api, status, message, kind), status, headers=headers)


def api_of(path: str) -> str:
    """Which API a path belongs to, for errors answered before a route runs (413, 500)."""
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith("/v1/responses"):
        return "openai-responses"
    if "/models/" in path and ":" in path:
        return "gemini"
    return "openai-chat"


TOO_LARGE_KIND = {"anthropic": "request_too_large", "gemini": "INVALID_ARGUMENT"}


def _edge_reply(limit: int) -> Any:
    """The body and headers of a 413 (over ``limit`` bytes) or a 500, in the path's format."""

    def reply(scope: dict[str, Any], status: int) -> tuple[dict[str, Any], dict[str, str]]:
        api = api_of(str(scope.get("path", "")))
        if status == 413:
            message = f"autorl gateway: the request body is over the limit of {limit} bytes"
            kind = TOO_LARGE_KIND.get(api, "invalid_request_error")
            return render.error_body(api, 413, message, kind), NO_RETRY
        return render.error_body(api, status, "autorl gateway: internal error"), {}

    return reply


async def _json_object(request: Request) -> dict[str, Any] | str:
    """The request's JSON object, or why it is not one (the message of a 400)."""
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return "autorl gateway: the request body is not JSON"
    if not isinstance(body, dict):
        return "autorl gateway: the request body must be a JSON object"
    return body


REFUSAL = {
    "openai-chat": (403, "insufficient_quota"),
    "openai-responses": (429, "insufficient_quota"),
    "anthropic": (429, "rate_limit_error"),
    "gemini": (403, "PERMISSION_DENIED"),
}
"""How a spent budget is refused, per API: the status each real CLI treats as final (measured).
Codex stops on 429 ``insufficient_quota`` but retries a 403; Claude Code stops on a 429 that says
``x-should-retry: false``; Gemini CLI and OpenCode retry any 429 for minutes but stop on 403."""


def _refusal(api: str, message: str) -> JSONResponse:
    status, kind = REFUSAL[api]
    return _error(api, status, message, kind)


def _failure(api: str, exc: Exception) -> JSONResponse:
    """A driver failure as the client's error: its own fault 400, the upstream's 502."""
    if isinstance(exc, BudgetRefused):
        return _refusal(api, str(exc))
    if isinstance(exc, DriverRequestError):
        return _error(api, 400, f"autorl gateway: {exc}")
    if isinstance(exc, DriverAPIError) and exc.status == 400:
        return _error(api, 400, f"autorl gateway: the model backend rejected the request: {exc}")
    if isinstance(exc, DriverError):
        return _error(api, 502, f"autorl gateway: the model backend failed: {exc}")
    return _error(api, 500, f"autorl gateway: internal error: {type(exc).__name__}: {exc}")


def _stream_body(api: str, parsed: ParsedRequest, pieces: Iterator[Any]) -> Iterator[str]:
    model = parsed.model
    if api == "openai-chat":
        events = render.chat_stream(model, pieces, include_usage=parsed.include_usage)
    elif api == "openai-responses":
        events = render.responses_stream(model, pieces)
    elif api == "anthropic":
        estimate = estimate_tokens(parsed.request.all_text())
        events = render.anthropic_stream(model, pieces, input_tokens=estimate)
    else:
        events = render.gemini_stream(model, pieces)
    try:
        yield from events
    except Exception as exc:  # after the first byte the status is sent: report in-stream
        body = render.error_body(api, 502, f"autorl gateway: the stream broke: {exc}")
        yield render.sse(body, "error" if api == "anthropic" else None)


class ClosingStream(StreamingResponse):
    """A streamed answer whose generators are closed when the response ends, however it ends.

    If the client hangs up mid-stream, closing the gateway's generator raises GeneratorExit at
    its last yield, where the service charges what was spent (see GatewayService.stream), right
    away rather than whenever the garbage collector gets to it.
    """

    def __init__(self, content: Iterator[str], *, close: tuple[Any, ...], **kw: Any) -> None:
        super().__init__(content, **kw)
        self._to_close = close

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await run_in_threadpool(self._close)

    def _close(self) -> None:
        for generator in self._to_close:
            for _ in range(100):  # a worker thread may still be inside next(): wait for it
                try:
                    generator.close()
                    break
                except ValueError:
                    time.sleep(0.05)


JSON_OF = {
    "openai-chat": render.chat_json,
    "openai-responses": render.responses_json,
    "anthropic": render.anthropic_json,
    "gemini": render.gemini_json,
}


def create_gateway_app(
    service: GatewayService, token: str, *, max_body_bytes: int = MAX_BODY_BYTES
) -> FastAPI:
    """The app for one run: ``token`` is the run token the agent uses as its API key; a body
    over ``max_body_bytes`` is refused with 413 on every path."""
    app = FastAPI(title="autorl gateway", docs_url=None, redoc_url=None, openapi_url=None)
    edge = _edge_reply(max_body_bytes)
    app.add_middleware(ContainErrors, what="LLM gateway", reply=edge)
    app.add_middleware(BodyLimit, limit=max_body_bytes, reply=edge)

    def authorised(request: Request) -> bool:
        return secrets.compare_digest(_token_of(request).encode(), token.encode())

    async def handle(
        api: str, request: Request, reader: Callable[[dict[str, Any]], ParsedRequest]
    ) -> Response:
        if not authorised(request):
            return _error(
                api, 401, "autorl gateway: missing or wrong run token (use $AUTORL_TOKEN)"
            )
        body = await _json_object(request)
        if isinstance(body, str):
            return _error(api, 400, body)
        try:
            parsed = reader(body)
        except DriverError as exc:
            return _error(api, 400, f"autorl gateway: {exc}")
        except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError):
            # a shape the parser did not foresee (a list where text was expected...): the
            # client's fault, never a 500 with a traceback
            return _error(api, 400, "autorl gateway: the request does not have the API's shape")
        if not parsed.stream:
            try:
                reply = await run_in_threadpool(service.chat, parsed)
            except Exception as exc:
                return _failure(api, exc)
            return JSONResponse(JSON_OF[api](reply))
        pieces = service.stream(parsed)
        try:  # open the stream first, so a refusal or a dead backend is a proper HTTP error
            first = await run_in_threadpool(next, pieces)
        except Exception as exc:
            return _failure(api, exc)

        def chained() -> Iterator[Any]:
            yield first
            yield from pieces

        events = _stream_body(api, parsed, chained())
        return ClosingStream(
            events,
            close=(events, pieces),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache"},
        )

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        return await handle("openai-chat", request, parse.parse_openai_chat)

    @app.post("/v1/responses")
    async def responses(request: Request) -> Response:
        return await handle("openai-responses", request, parse.parse_openai_responses)

    @app.post("/v1/messages")
    async def messages(request: Request) -> Response:
        return await handle("anthropic", request, parse.parse_anthropic)

    @app.post("/v1/messages/count_tokens")
    async def count_tokens(request: Request) -> Response:
        if not authorised(request):
            return _error("anthropic", 401, "autorl gateway: missing or wrong run token")
        body = await _json_object(request)
        if isinstance(body, str):
            return _error("anthropic", 400, body)
        if not isinstance(body.get("messages"), list):
            return _error("anthropic", 400, "autorl gateway: messages: a list is required")
        try:
            text = json.dumps([body.get("system"), body.get("messages"), body.get("tools")])
        except (TypeError, ValueError, RecursionError):
            return _error("anthropic", 400, "autorl gateway: the request cannot be counted")
        return JSONResponse({"input_tokens": estimate_tokens(text)})

    @app.post("/{version}/models/{model_action}")
    async def gemini(version: str, model_action: str, request: Request) -> Response:
        action = model_action.partition(":")[2]
        if action == "countTokens":
            if not authorised(request):
                return _error("gemini", 401, "autorl gateway: missing or wrong run token")
            body = await _json_object(request)
            if isinstance(body, str):
                return _error("gemini", 400, body)
            try:
                text = json.dumps(body)
            except (TypeError, ValueError, RecursionError):
                return _error("gemini", 400, "autorl gateway: the request cannot be counted")
            return JSONResponse({"totalTokens": estimate_tokens(text)})
        if action not in ("generateContent", "streamGenerateContent"):
            return _error("gemini", 404, f"autorl gateway: {action or 'no action'!r} is not served")
        return await handle("gemini", request, lambda b: parse.parse_gemini(b, model_action))

    def models(request: Request, api: str) -> Response:
        if not authorised(request):
            return _error(api, 401, "autorl gateway: missing or wrong run token")
        name = service.model
        if api == "gemini":
            return JSONResponse(
                {
                    "models": [
                        {
                            "name": f"models/{name}",
                            "displayName": name,
                            "supportedGenerationMethods": ["generateContent"],
                        }
                    ]
                }
            )
        entry = {
            "id": name,
            "object": "model",
            "type": "model",
            "display_name": name,
            "created": 0,
            "created_at": "1970-01-01T00:00:00Z",
            "owned_by": "autorl",
        }
        return JSONResponse(
            {
                "object": "list",
                "data": [entry],
                "has_more": False,
                "first_id": name,
                "last_id": name,
            }
        )

    @app.get("/v1/models")
    async def list_models(request: Request) -> Response:
        return models(request, "openai-chat")

    @app.get("/v1beta/models")
    async def list_gemini_models(request: Request) -> Response:
        return models(request, "gemini")

    @app.get("/autorl/budget")
    async def driver_budget(request: Request) -> Response:
        """The agent may watch its own driver spend (tokens, dollars, limits)."""
        if not authorised(request):
            return _error("openai-chat", 401, "autorl gateway: missing or wrong run token")
        return JSONResponse(
            {"driver": f"{service.backend}/{service.model}", **service.budget.spend()}
        )

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"ok": True}

    return app
