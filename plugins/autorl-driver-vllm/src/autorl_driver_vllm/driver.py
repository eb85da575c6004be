"""The ``vllm`` driver: the openai backend pointed at a vLLM OpenAI-compatible server.

The server is found from the ``base_url`` option, else ``VLLM_BASE_URL``; with ``serve=True``
(and neither set) the driver starts one itself on first use: vLLM on a CUDA GPU, else autorl's
vLLM CPU engine (``serve="cpu"`` asks for it outright). Local models cost 0 unless ``prices=``
says otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from autorl_driver_openai.driver import OpenAIDriver
from autorl_llm.drivers import ChatRequest, ChatResponse
from autorl_llm.drivers.errors import DriverConfigError

from autorl_driver_vllm.cpu_engine import CPUEngineServe
from autorl_driver_vllm.server import VLLMServer

SERVE_OPTIONS = frozenset({"serve", "serve_args", "serve_timeout_s", "serve_log"})


class VLLMDriver(OpenAIDriver):
    """``vllm/<hf-model-id>``. Options: ``base_url``, ``env``, ``serve`` (start the server),
    ``serve_args`` (extra vLLM CLI flags), ``serve_timeout_s``, ``serve_log``, plus the openai
    backend's options. ``serve=True`` picks a GPU server when vLLM and a GPU are here, else the
    CPU engine; ``serve="cpu"`` the CPU engine (the model: a directory or an autorl model
    name)."""

    name = "vllm"
    known_options = OpenAIDriver.known_options | SERVE_OPTIONS
    key_vars = ("VLLM_API_KEY",)
    url_var = "VLLM_BASE_URL"
    key_required = False

    def __init__(self, model: str, **options: Any) -> None:
        env = options.get("env")
        env = os.environ if env is None else env
        self.server: VLLMServer | CPUEngineServe | None = None
        serve = options.get("serve")
        if not options.get("base_url") and not env.get("VLLM_BASE_URL"):
            if not serve:
                raise DriverConfigError(
                    f"vllm/{model}: no server: set the driver option base_url= or VLLM_BASE_URL "
                    "(e.g. http://127.0.0.1:8000/v1)",
                    hint="or pass serve=True to start one here (a CUDA GPU with vllm, or "
                    "autorl's vLLM CPU engine: `autorl engine prepare`)",
                )
            timeout = float(options.get("serve_timeout_s", 900))
            args = options.get("serve_args") or ()
            if isinstance(args, str):
                args = args.split()
            if str(serve).lower() == "cpu" or not VLLMServer.gpu_ready():
                self.server = CPUEngineServe(
                    model, f"vllm/{model}", args=args, startup_timeout_s=timeout
                )
            else:
                self.server = VLLMServer(
                    model,
                    args=args,
                    log_path=Path(options["serve_log"]) if options.get("serve_log") else None,
                    startup_timeout_s=timeout,
                )
            options = {**options, "base_url": "http://127.0.0.1:0/v1"}  # set on first use
        options.setdefault("max_tokens_param", "max_tokens")
        super().__init__(model, **options)

    def _ensure_server(self) -> None:
        if isinstance(self.server, CPUEngineServe):
            if self.server.server is None:  # the engine listens on a unix socket
                self.client = self.client.with_options(
                    base_url="http://engine/v1", http_client=self.server.client()
                )
        elif self.server is not None and self.server.process is None:
            self.base_url = self.server.start(self.driver_name)
            self.client = self.client.with_options(base_url=self.base_url)

    def _send(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        self._ensure_server()
        return super()._send(request, timeout_s)

    def _send_stream(self, request: ChatRequest, timeout_s: float):  # type: ignore[override]
        self._ensure_server()
        yield from super()._send_stream(request, timeout_s)

    def close(self) -> None:
        """Stop the server this driver started (if any)."""
        if self.server is not None:
            self.server.stop()
