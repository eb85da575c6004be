"""Serve an ASGI app with uvicorn in a background thread: on 127.0.0.1 (a free port) and,
when asked, also on a unix socket that namespace sandboxes forward the same port to.

The grading API and the LLM gateway both run this way; uvicorn is imported on start only.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from autorl.errors import AutorlError

HOST = "127.0.0.1"


def unix_listener(path: Path) -> socket.socket:
    """A unix socket any local uid may connect to (the agent runs as another uid); what it
    serves still needs the run's bearer token."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, 0o666)
    sock.listen(128)  # now: a client connecting before the server's loop runs waits, not refused
    return sock


class ThreadedServer:
    def __init__(
        self, app: Any, *, what: str, unix_socket: Path | None = None, host: str = HOST
    ) -> None:
        self.app = app
        self.host = host
        self.what = what
        self.unix_socket = unix_socket
        self._tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._tcp.bind((host, 0))
        self.port: int = self._tcp.getsockname()[1]
        self._sockets = [self._tcp]
        if unix_socket is not None:
            self._sockets.append(unix_listener(unix_socket))
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> ThreadedServer:
        import uvicorn

        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": self._sockets},
            daemon=True,
            name=f"autorl-{self.what}",
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise AutorlError(f"the {self.what} did not start on {self.host}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        for sock in self._sockets:
            sock.close()
        if self.unix_socket is not None:
            with contextlib.suppress(OSError):
                self.unix_socket.unlink()
