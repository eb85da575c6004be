"""Serve an ASGI app with uvicorn in a background thread: on 127.0.0.1 (a free port) and,
when asked, also on a unix socket that namespace sandboxes forward the same port to.
uvicorn is imported on start only."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from pathlib import Path
from typing import Any, Self

from autorl.errors import AutorlError
from autorl_serving.gate import (
    HOST,
    RESOURCE_ERRNOS,
    ConnectionGate,
    GuardedListener,
    connection_limit,
    unix_listener,
)
from autorl_serving.logs import install_log_limits, log

FIRST_BYTE_SECONDS = 15.0
"""A connection that has sent no byte this long after it was accepted is closed."""
SHUTDOWN_GRACE_SECONDS = 2.0
"""uvicorn's graceful shutdown: requests still running after this are cancelled."""
STOP_SECONDS = 5.0
"""``stop()`` waits at most this long for the server thread (then forces it, 1 s more)."""


class ThreadedServer:
    """An ASGI app served by uvicorn in a daemon thread on 127.0.0.1 (a free port) and, with
    ``unix_socket``, on an owner-only unix socket; every listener behind a connection gate."""

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


class Served:
    """Base of an object that serves its app on one :class:`ThreadedServer`: ``start()`` builds
    the app and hands the server to :meth:`_serve`; ``stop()`` and ``with`` come from here."""

    port: int = 0
    _server: ThreadedServer | None = None

    def start(self, timeout: float = 10.0) -> Self:
        raise NotImplementedError

    def _serve(self, server: ThreadedServer, timeout: float) -> Self:
        """Start ``server`` and learn its loopback port."""
        self._server = server
        self.port = server.port
        server.start(timeout)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
