"""Start a vLLM OpenAI-compatible server for one model, on 127.0.0.1, when asked to.

Only with ``serve=True``: it needs the ``vllm`` package and a CUDA GPU, and loading a model
takes minutes. Without them the error says so instead of failing deep inside vLLM.
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
from autorl_llm.drivers.errors import DriverConfigError, DriverUnavailableError


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class VLLMServer:
    """A ``python -m vllm.entrypoints.openai.api_server`` child process."""

    def __init__(
        self,
        model: str,
        *,
        args: Sequence[str] = (),
        log_path: Path | None = None,
        startup_timeout_s: float = 900.0,
    ) -> None:
        self.model = model
        self.args = list(args)
        self.log_path = log_path
        self.startup_timeout_s = startup_timeout_s
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def gpu_ready() -> bool:
        """vLLM importable here and a CUDA GPU present: serve=True starts a GPU server."""
        return importlib.util.find_spec("vllm") is not None and bool(shutil.which("nvidia-smi"))

    @staticmethod
    def check_available(driver: str) -> None:
        if importlib.util.find_spec("vllm") is None:
            raise DriverConfigError(
                f"{driver}: serve=True needs the vllm package, which is not installed",
                hint="pip install 'autorl-driver-vllm[serve]' on a CUDA machine, or start the "
                "server elsewhere and pass base_url= (or VLLM_BASE_URL)",
            )
        if shutil.which("nvidia-smi") is None:
            raise DriverConfigError(
                f"{driver}: serve=True needs a CUDA GPU and none was found (no nvidia-smi)",
                hint="point base_url= at a vLLM server running on a GPU machine",
            )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, driver: str) -> str:
        self.check_available(driver)
        self.port = _free_port()
        cmd = [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            self.model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *self.args,
        ]
        log = self.log_path.open("ab") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise DriverUnavailableError(
                    f"{driver}: the vLLM server exited with code {self.process.returncode} "
                    "while loading the model",
                    hint=f"see {self.log_path}"
                    if self.log_path
                    else "pass log_path= to keep its output",
                )
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return self.base_url
            except httpx.HTTPError:
                pass
            time.sleep(1)
        self.stop()
        raise DriverUnavailableError(
            f"{driver}: the vLLM server was not ready within {self.startup_timeout_s:g} s",
            hint="raise serve_timeout_s (large models load slowly)",
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
