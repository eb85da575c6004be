"""Serve an ASGI app with uvicorn in a background thread: on 127.0.0.1 (a free port) and,
when asked, also on a unix socket that namespace sandboxes forward the same port to.

The grading API and the LLM gateway both run this way; uvicorn is imported on start only.

Everything that reaches these sockets may be the agent's, so the server defends the harness
process it lives in (issue 30, "the harness survives its own sockets"):

- the unix socket is mode 0600, its owner the harness's uid: only the sandbox's forwarder
  (its PID 1, the harness's uid or root) may connect, never the agent's own uid;
- each listener admits at most :func:`connection_limit` open connections (the sandbox's
  connections all come through one listener, so this is the per-client cap); one more is
  answered ``503`` at once and closed, so a flood never takes the harness's file descriptors;
- a connection that sends nothing for ``first_byte_s`` seconds is closed (held-open floods);
- when ``accept`` fails for want of descriptors (EMFILE, ENFILE), one pending client is still
  answered ``503`` (through a reserved descriptor) and the listener pauses for a second: no
  busy loop, no traceback per attempt;
- :class:`BodyLimit` caps request bodies (413) and :class:`ContainErrors` turns an unexpected
  exception into one log line and a 500, never a traceback on the harness's terminal;
- repeated identical log records are rate-limited (:class:`RepeatFilter`);
- ``stop()`` returns within a bounded time whatever the open connections do.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import resource
import socket
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from autorl.errors import AutorlError

HOST = "127.0.0.1"
MAX_CONNECTIONS = 256
"""Open connections per listener at most (see :func:`connection_limit`)."""
FIRST_BYTE_SECONDS = 15.0
"""A connection that has sent no byte this long after it was accepted is closed."""
SHUTDOWN_GRACE_SECONDS = 2.0
"""uvicorn's graceful shutdown: requests still running after this are cancelled."""
STOP_SECONDS = 5.0
"""``stop()`` waits at most this long for the server thread (then forces it, 1 s more)."""
BACKLOG = 128
"""Pending connections a listener asks for (``listen``); kernels may queue more."""
SHED_ON_SHORTAGE = 4096
"""Pending connections one descriptor shortage answers 503 at most (about 0.1 s of work)."""
LINGER_SECONDS = 2.0
LINGER_BYTES = 128 * 1024 * 1024
"""After a 413, what of the rest of an upload is read and dropped at most (see BodyLimit)."""
SHED_PER_TICK = 64
"""Connections refused in one go before the event loop gets to do other work."""
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_BUSY_BODY = b'{"detail": "too many open connections to this service; retry in a moment"}'
BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)
log = logging.getLogger("autorl.serving")


def connection_limit() -> int:
    """Open connections per listener: 256, or an eighth of the soft RLIMIT_NOFILE if that is
    less (at least 8), so that the four listeners of a run (grader and gateway, TCP and unix)
    together leave at least half of the process's descriptors to the harness's own files."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, soft // 8))


def unix_listener(path: Path, mode: int = 0o600) -> socket.socket:
    """A listening unix socket only its owner (the harness's uid) may connect to, by default.

    The sandboxes' forwarder (their PID 1) runs as the harness's uid, or as root when the harness
    is root; the agent runs as another uid and reaches the service only through the forwarder.
    A sandbox whose forwarder has another uid (docker without root) widens ``mode`` itself.
    """
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))  # not listening yet: nobody can connect before the chmod
    os.chmod(path, mode)
    sock.listen(BACKLOG)  # now: a client connecting before the loop runs waits, not refused
    return sock


# -- logs ---------------------------------------------------------------------------------------


class RepeatFilter(logging.Filter):
    """Lets the first ``burst`` records of one kind (logger, level, message template, exception
    type) through per ``window`` seconds and drops the rest; the next one let through says how
    many were dropped. A flood of identical errors costs a few lines, not gigabytes."""

    def __init__(self, burst: int = 5, window: float = 60.0, max_kinds: int = 1000) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.max_kinds = max_kinds
        self._seen: dict[tuple[Any, ...], list[float]] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        template = record.msg if isinstance(record.msg, str) else type(record.msg).__name__
        kind = record.exc_info[0] if record.exc_info else None
        key = (record.name, record.levelno, template[:200], kind)
        now = time.monotonic()
        with self._lock:
            state = self._seen.get(key)  # [window start, records this window, dropped]
            if state is None or now - state[0] >= self.window:
                dropped = int(state[2]) if state else 0
                if state is None and len(self._seen) >= self.max_kinds:
                    self._seen.clear()
                self._seen[key] = [now, 1, 0]
                if dropped:
                    record.msg = (
                        f"{record.getMessage()} ({dropped} more like this were not logged in "
                        f"the last {self.window:.0f} s)"
                    )
                    record.args = None
                return True
            state[1] += 1
            if state[1] <= self.burst:
                return True
            state[2] += 1
            return False


REPEAT_FILTER = RepeatFilter()
LIMITED_LOGGERS = (
    "autorl.serving",
    "autorl.grading",
    "autorl.gateway",
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
    "asyncio",
)


def install_log_limits() -> None:
    """Rate-limit the loggers the servers write to (idempotent)."""
    for name in LIMITED_LOGGERS:
        logger = logging.getLogger(name)
        if REPEAT_FILTER not in logger.filters:
            logger.addFilter(REPEAT_FILTER)


# -- ASGI pieces shared by the grading API and the gateway ---------------------------------------

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


class BodyLimit:
    """Answer 413 to a request body over ``limit`` bytes, from its Content-Length or, for a
    chunked body, as soon as the bytes read pass the limit; never buffers more than that.

    ``reply(scope, 413)`` shapes the answer (each API has its own error format); by default
    ``{"detail": "request body too large: at most N bytes"}``.
    """

    def __init__(self, app: ASGIApp, limit: int, reply: Reply | None = None) -> None:
        self.app = app
        self.limit = limit
        self.reply = reply or _plain_reply(f"request body too large: at most {limit} bytes")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
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


class ContainErrors:
    """An exception the app did not handle becomes a 500 (``reply(scope, 500)``) and one
    rate-limited log line naming its type, method and path: never its text (it may carry the
    agent's input or the harness's paths) and never a traceback on the harness's terminal."""

    def __init__(self, app: ASGIApp, what: str, reply: Reply | None = None) -> None:
        self.app = app
        self.what = what
        self.reply = reply or _plain_reply(f"internal error in the {what}; try again later")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
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


# -- the connection gate -------------------------------------------------------------------------


class ConnectionGate:
    """The open connections of one listener, at most ``limit``; a reserved descriptor to
    answer one client even when the process has none left."""

    def __init__(self, what: str, limit: int, first_byte_s: float | None) -> None:
        self.what = what
        self.limit = limit
        self.first_byte_s = first_byte_s
        self.shed = 0
        """Connections answered 503 because the limit was reached or descriptors ran out."""
        self.exhausted = 0
        """Times ``accept`` failed for want of descriptors (or memory)."""
        self.silent_closed = 0
        """Connections closed because they sent nothing within ``first_byte_s``."""
        self._open: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._reserve: int | None = _reserve_fd()
        self.paused_until = 0.0

    @property
    def active(self) -> int:
        with self._lock:
            return len(self._open)

    def admit(self, conn: _Connection) -> bool:
        with self._lock:
            if len(self._open) >= self.limit:
                return False
            self._open.add(conn)
            return True

    def release(self, conn: _Connection) -> None:
        with self._lock:
            self._open.discard(conn)

    def sweep(self, now: float) -> int:
        """Close the connections that sent nothing within ``first_byte_s``; how many."""
        if self.first_byte_s is None:
            return 0
        with self._lock:
            silent = [c for c in self._open if not c.heard and now - c.opened > self.first_byte_s]
        for conn in silent:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)  # the loop sees EOF and closes it
        self.silent_closed += len(silent)
        return len(silent)

    def out_of_descriptors(self, listener: socket.socket, exc: OSError) -> None:
        """Answer the pending clients with 503 through the reserved
        descriptor, one at a time, then take it back: they learn at once that the service is
        busy instead of waiting behind a listener that cannot accept."""
        self.exhausted += 1
        self.paused_until = time.monotonic() + 0.1  # the rest of asyncio's accept round
        log.warning(
            "the %s is out of file descriptors (%s, %d open connections): pausing accept",
            self.what,
            errno.errorcode.get(exc.errno or 0, "?"),
            self.active,
        )
        if self._reserve is None:
            self._reserve = _reserve_fd()
            return
        os.close(self._reserve)
        self._reserve = None
        try:
            for _ in range(SHED_ON_SHORTAGE):
                try:
                    fd, _ = listener._accept()  # type: ignore[attr-defined]
                except OSError:
                    break
                self.shed += 1
                refuse(socket.socket(listener.family, listener.type, listener.proto, fileno=fd))
        finally:
            self._reserve = _reserve_fd()

    def close(self) -> None:
        if self._reserve is not None:
            with contextlib.suppress(OSError):
                os.close(self._reserve)
            self._reserve = None


def _reserve_fd() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def refuse(conn: socket.socket) -> None:
    """Answer 503 on a fresh connection and close it without blocking."""
    try:
        conn.setblocking(False)
        conn.send(BUSY_RESPONSE)
        conn.shutdown(socket.SHUT_WR)
        for _ in range(4):  # read what the client already sent: close() then sends FIN, not RST
            if not conn.recv(65536):
                break
    except OSError:
        pass
    finally:
        conn.close()


class _Connection(socket.socket):
    """An accepted connection that leaves its gate when closed and notes its first byte."""

    __slots__ = ("gate", "heard", "opened")

    gate: ConnectionGate
    heard: bool
    opened: float

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data = super().recv(bufsize, flags)
        if data:
            self.heard = True
        return data

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        n = super().recv_into(buffer, nbytes, flags)
        if n:
            self.heard = True
        return n

    def close(self) -> None:
        self.gate.release(self)
        super().close()

    def detach(self) -> int:
        self.gate.release(self)
        return super().detach()


class GuardedListener(socket.socket):
    """A listening socket whose ``accept`` (the one asyncio's loop calls) enforces its gate:
    connections over the limit are answered 503 and closed right there."""

    gate: ConnectionGate

    @classmethod
    def wrap(cls, sock: socket.socket, gate: ConnectionGate) -> GuardedListener:
        guarded = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        guarded.gate = gate
        return guarded

    def accept(self) -> tuple[socket.socket, Any]:
        for _ in range(SHED_PER_TICK):
            if time.monotonic() < self.gate.paused_until:  # asyncio retries within its tick
                raise BlockingIOError(errno.EAGAIN, "paused: out of file descriptors")
            try:
                fd, addr = self._accept()  # type: ignore[attr-defined]
            except OSError as exc:
                if exc.errno in RESOURCE_ERRNOS:
                    self.gate.out_of_descriptors(self, exc)
                raise  # asyncio pauses this listener for a second (ACCEPT_RETRY_DELAY)
            conn = _Connection(self.family, self.type, self.proto, fileno=fd)
            conn.gate = self.gate
            conn.heard = False
            conn.opened = time.monotonic()
            if self.gate.admit(conn):
                return conn, addr
            self.gate.shed += 1
            refuse(conn)
        raise BlockingIOError(errno.EAGAIN, "refused a burst of connections; more on the next tick")


# -- the server ----------------------------------------------------------------------------------


class ThreadedServer:
    def __init__(
        self,
        app: Any,
        *,
        what: str,
        unix_socket: Path | None = None,
        host: str = HOST,
        max_connections: int | None = None,
        first_byte_s: float | None = FIRST_BYTE_SECONDS,
    ) -> None:
        """``max_connections`` per listener (default :func:`connection_limit`)."""
        self.app = app
        self.host = host
        self.what = what
        self.unix_socket = unix_socket
        limit = max_connections or connection_limit()
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind((host, 0))
        self.port: int = tcp.getsockname()[1]
        self.gates = [ConnectionGate(f"{what} (tcp)", limit, first_byte_s)]
        self._sockets: list[socket.socket] = [GuardedListener.wrap(tcp, self.gates[0])]
        if unix_socket is not None:
            self.gates.append(ConnectionGate(f"{what} (unix socket)", limit, first_byte_s))
            self._sockets.append(GuardedListener.wrap(unix_listener(unix_socket), self.gates[1]))
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stats(self) -> dict[str, int]:
        """Open, refused and silently-closed connections and descriptor shortages so far."""
        return {
            "open": sum(g.active for g in self.gates),
            "refused": sum(g.shed for g in self.gates),
            "silent_closed": sum(g.silent_closed for g in self.gates),
            "out_of_descriptors": sum(g.exhausted for g in self.gates),
        }

    def start(self, timeout: float = 10.0) -> ThreadedServer:
        import uvicorn

        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=int(SHUTDOWN_GRACE_SECONDS),
        )
        install_log_limits()  # after Config: it (re)configures uvicorn's loggers
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"autorl-{self.what}")
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise AutorlError(f"the {self.what} did not start on {self.host}")
            time.sleep(0.02)
        return self

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(self._loop_error)
        sweeper = asyncio.create_task(self._sweep())
        try:
            await self._server.serve(sockets=self._sockets)
        finally:
            sweeper.cancel()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for gate in self.gates:
                gate.sweep(now)

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Descriptor shortages were logged by the gate already: no traceback each second."""
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
            return
        if isinstance(exc, (OSError, ValueError)) and self._server.should_exit:
            # asyncio's retry of a paused listener, after shutdown closed the listener
            log.debug("%s: %s while stopping", self.what, type(exc).__name__)
            return
        loop.default_exception_handler(context)

    def stop(self) -> None:
        """Stop serving; returns within about ``STOP_SECONDS`` + 1 s whatever clients do."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=STOP_SECONDS)
            if self._thread.is_alive() and self._server is not None:
                self._server.force_exit = True
                self._thread.join(timeout=1.0)
            if self._thread.is_alive():
                log.warning("the %s did not stop in time; left behind", self.what)
        for sock in self._sockets:
            sock.close()
        for gate in self.gates:
            gate.close()
        if self.unix_socket is not None:
            with contextlib.suppress(OSError):
                self.unix_socket.unlink()
