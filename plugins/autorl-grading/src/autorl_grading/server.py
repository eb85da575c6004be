"""Run the grading app with uvicorn on 127.0.0.1 (a free port) in a background thread, and on a
unix socket for namespace sandboxes (which forward the same port to it)."""

from __future__ import annotations

from pathlib import Path

from autorl_serving import ThreadedServer


class GradingServer(ThreadedServer):
    def __init__(self, app: object, unix_socket: Path | None = None) -> None:
        super().__init__(app, what="grading server", unix_socket=unix_socket)

    def __enter__(self) -> GradingServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
