"""The metering LLM gateway of one run: a driver behind the providers' APIs on 127.0.0.1.

The agent talks to it with its run token as API key; the upstream key stays in the harness
process. Started by the engine when the run has a ``driver``; usable alone in tests::

    with Gateway(open_driver("scripted/demo.yaml"), token="t", log_path="calls.jsonl") as gw:
        client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key="t")
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from autorl_serving import HOST, Served, ThreadedServer

from autorl.errors import AutorlError
from autorl_llm.drivers.calllog import DriverCallLog
from autorl_llm.gateway.budget import DriverBudget
from autorl_llm.gateway.health import Notify, UpstreamHealth


class Gateway(Served):
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
        on_upstream: Notify | None = None,
        unix_socket: Path | None = None,
        max_body_bytes: int | None = None,
    ) -> None:
        """``max_body_bytes``: the largest request body accepted (413 above; default
        ``autorl_llm.gateway.app.MAX_BODY_BYTES``, 8 MiB)."""
        if not token:
            raise AutorlError("the gateway needs a non-empty run token")
        self.driver = driver
        self.token = token
        self.log = DriverCallLog(log_path)
        self.budget = DriverBudget(max_tokens, max_cost_usd, on_exhausted)
        self.health = UpstreamHealth(on_upstream)
        """Failed and retried calls; ``on_upstream(event, fields)`` hears each (see health)."""
        self.unix_socket = unix_socket
        self.max_body_bytes = max_body_bytes

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, timeout: float = 10.0) -> Gateway:
        from autorl_llm.gateway.app import MAX_BODY_BYTES, create_gateway_app
        from autorl_llm.gateway.service import GatewayService

        app = create_gateway_app(
            GatewayService(self.driver, self.budget, self.log, self.health),
            self.token,
            max_body_bytes=self.max_body_bytes or MAX_BODY_BYTES,
        )
        server = ThreadedServer(app, what="LLM gateway", unix_socket=self.unix_socket)
        return self._serve(server, timeout)

    def stop(self) -> None:
        """Stop serving, then close the driver: a model it serves itself (``vllm`` with
        ``serve=True``) ends with the run, not with the harness's process."""
        super().stop()
        close = getattr(self.driver, "close", None)
        if callable(close):
            close()
