"""ASGI pieces shared by the grading API and the gateway: a body cap (413) and contained errors
(500 and one log line), with no web framework needed."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from autorl_serving.logs import log

LINGER_SECONDS = 2.0
LINGER_BYTES = 128 * 1024 * 1024
"""After a 413, what of the rest of an upload is read and dropped at most (see BodyLimit)."""

ASGIApp = Callable[..., Awaitable[None]]
Reply = Callable[[dict[str, Any], int], tuple[dict[str, Any], dict[str, str]]]
"""``reply(scope, status)``: the JSON body and extra headers of an error answer to a request."""


def _plain_reply(message: str) -> Reply:
    def reply(scope: dict[str, Any], status: int) -> tuple[dict[str, Any], dict[str, str]]:
        return {"detail": message}, {}

    return reply


async def send_json(send: Any, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
    """A complete JSON answer through a raw ASGI ``send`` (no framework needed)."""
    data = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


class _HttpMiddleware:
    """Wraps ``app``; HTTP requests go through :meth:`http`, the rest of ASGI (lifespan,
    websockets) straight to the app. ``reply(scope, status)`` shapes its error answers."""

    def __init__(self, app: ASGIApp, reply: Reply) -> None:
        self.app = app
        self.reply = reply

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise NotImplementedError


class BodyLimit(_HttpMiddleware):
    """Answer 413 to a request body over ``limit`` bytes, from its Content-Length or, for a
    chunked body, as soon as the bytes read pass the limit; never buffers more than that.

    ``reply(scope, 413)`` shapes the answer (each API has its own error format); by default
    ``{"detail": "request body too large: at most N bytes"}``.
    """

    def __init__(self, app: ASGIApp, limit: int, reply: Reply | None = None) -> None:
        super().__init__(
            app, reply or _plain_reply(f"request body too large: at most {limit} bytes")
        )
        self.limit = limit

    async def http(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await self._too_large(scope, receive, send)
            return
        first = await self._read_body(receive)
        if first is None:
            await self._too_large(scope, receive, send)
            return
        await self.app(scope, _replay(first, receive), send)

    async def _read_body(self, receive: Any) -> dict[str, Any] | None:
        """The whole body as one message (None once it passes the limit); a disconnect as is."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see it
                return message
            body = message.get("body", b"")
            size += len(body)
            if size > self.limit:
                return None
            chunks.append(body)
            if not message.get("more_body", False):
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

    async def _too_large(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Send the whole 413 at once, then read and drop what the client still uploads (at
        most ``LINGER_BYTES`` for ``LINGER_SECONDS``) before the connection closes: closing on
        unread bytes sends a reset, which may destroy the answer before the client reads it."""
        body, headers = self.reply(scope, 413)
        data = json.dumps(body).encode()
        raw = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
        raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        raw.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": 413, "headers": raw})
        await send({"type": "http.response.body", "body": data, "more_body": True})
        deadline = time.monotonic() + LINGER_SECONDS
        dropped = 0
        while dropped < LINGER_BYTES:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                message = await asyncio.wait_for(receive(), left)
            except TimeoutError:
                break
            if message["type"] != "http.request":
                break
            dropped += len(message.get("body", b""))
            if not message.get("more_body", False):
                break
        await send({"type": "http.response.body", "body": b""})


def _content_length(scope: dict[str, Any]) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _replay(first: dict[str, Any], receive: Any) -> Any:
    """A receive that gives the buffered body once, then the client's later messages."""
    pending = [first]

    async def replay() -> dict[str, Any]:
        return pending.pop() if pending else await receive()

    return replay


class ContainErrors(_HttpMiddleware):
    """An exception the app did not handle becomes a 500 (``reply(scope, 500)``) and one
    rate-limited log line naming its type, method and path: never its text (it may carry the
    agent's input or the harness's paths) and never a traceback on the harness's terminal."""

    def __init__(self, app: ASGIApp, what: str, reply: Reply | None = None) -> None:
        super().__init__(
            app, reply or _plain_reply(f"internal error in the {what}; try again later")
        )
        self.what = what

    async def http(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        started = False

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            log.error(
                "%s: %s on %s %s",
                self.what,
                type(exc).__name__,
                str(scope.get("method", ""))[:16],
                str(scope.get("path", ""))[:200],
            )
            if not started:
                body, headers = self.reply(scope, 500)
                await send_json(send, 500, body, headers)
