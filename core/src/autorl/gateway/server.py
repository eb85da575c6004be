"""The metering LLM gateway of one run: a driver behind the providers' APIs on 127.0.0.1.

The agent talks to it with its run token as API key; the upstream key stays in the harness
process. Started by the engine when the run has a ``driver``; usable alone in tests::

    with Gateway(open_driver("scripted/demo.yaml"), token="t", log_path="calls.jsonl") as gw:
        client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key="t")
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autorl.drivers.calllog import DriverCallLog
from autorl.errors import AutorlError
from autorl.gateway.budget import DriverBudget

HOST = "127.0.0.1"


class Gateway:
    """Serves one driver; ``budget`` holds the spend; the call log lies outside the workspace."""

    def __init__(
        self,
        driver: Any,
        *,
        token: str,
        log_path: str | Path,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        on_exhausted: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        if not token:
            raise AutorlError("the gateway needs a non-empty run token")
        self.driver = driver
        self.token = token
        self.log = DriverCallLog(log_path)
        self.budget = DriverBudget(max_tokens, max_cost_usd, on_exhausted)
        self.port = 0
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, timeout: float = 10.0) -> Gateway:
        import uvicorn

        from autorl.gateway.app import create_gateway_app
        from autorl.gateway.service import GatewayService

        app = create_gateway_app(GatewayService(self.driver, self.budget, self.log), self.token)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((HOST, 0))
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise AutorlError(f"the LLM gateway did not start on {HOST}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
