"""A real LLM as the agent's brain, offline: ``vllm/smollm2-135m`` with ``serve="cpu"`` serves
SmolLM2-135M-Instruct on autorl's vLLM CPU engine, and the ``react`` agent runs a whole
``autorl run`` driven by it.

Needs the engine environment (``autorl engine prepare``; ``make test`` builds it and sets
``AUTORL_REQUIRE_ENGINE=1``, which turns a missing engine into a failure).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from subprocess import STDOUT

import autorl_model_smollm2  # noqa: F401
import autorl_model_tiny  # noqa: F401
import autorl_task_gsm8k  # noqa: F401
import psutil
import pytest
from autorl_driver_vllm.driver import VLLMDriver
from autorl_llm.drivers.errors import DriverConfigError
from autorl_testing.engine import needs_engine

pytestmark = [
    pytest.mark.slow,
    needs_engine,
]

MODEL = "smollm2-135m"
AUTORL = str(Path(sys.executable).parent / "autorl")


def engine_servers(name: str) -> list[psutil.Process]:
    """Every live process of the engines serving the model as ``name``: each engine's process
    group (its lifeline, the API server, the engine core and worker it spawned)."""
    groups = set()
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if "vllm.entrypoints.openai.api_server" in cmd and name in cmd:
            with contextlib.suppress(ProcessLookupError):
                groups.add(os.getpgid(proc.pid))
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(proc.pid) in groups:
                found.append(proc)
    return found


def test_a_model_that_is_neither_a_directory_nor_an_autorl_model_is_refused() -> None:
    with pytest.raises(DriverConfigError, match="needs a model directory or an installed"):
        VLLMDriver("Qwen/Qwen3-32B", env={}, serve="cpu")


def test_the_react_agent_runs_a_whole_run_driven_by_smollm2_on_the_engine(
    tmp_path: Path,
) -> None:
    """The first run of this project with a real model as the agent's brain and no network:
    every call (each offering the agent's tools) answered by SmolLM2 through the metering
    gateway, the engine's sockets loopback-only while it serves, the engine gone with the run
    (the gateway closes its driver)."""
    command = [
        AUTORL, "run", "--task", "gsm8k", "--model", "tiny", "--agent", "react",
        "--driver", f"vllm/{MODEL}", "--driver-option", "serve=cpu",
        "--agent-option", "max_turns=3", "--agent-option", "max_tokens=96",
        "--task-option", "train_size=20", "--task-option", "eval_size=4",
        "--budget", "420", "--runs-dir", str(tmp_path / "runs"), "--run-id", "brain",
    ]  # fmt: skip
    offline = {**os.environ, "HF_HUB_OFFLINE": "1"}
    log = tmp_path / "run.log"
    out = log.open("wb")
    proc = subprocess.Popen(command, env=offline, cwd=tmp_path, stdout=out, stderr=STDOUT)
    listening: list[str] = []  # the live engine's listening sockets, seen while it serves
    try:
        deadline = time.monotonic() + 900
        while proc.poll() is None and time.monotonic() < deadline and not listening:
            with contextlib.suppress(psutil.Error):
                listening = [
                    conn.laddr.ip
                    for member in engine_servers(MODEL)
                    for conn in member.net_connections(kind="inet")
                    if conn.status == psutil.CONN_LISTEN
                ]
            time.sleep(0.5)
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        proc.kill()
        out.close()
    assert proc.returncode == 0, log.read_text()[-6000:]
    # the API is a unix socket; vLLM's internal message queues listen on loopback only
    assert listening and set(listening) == {"127.0.0.1"}, listening
    run_dir = tmp_path / "runs" / "brain"
    calls = [json.loads(line) for line in (run_dir / "driver_calls.jsonl").read_text().splitlines()]
    answered = [c for c in calls if not c.get("error")]
    assert answered, calls
    assert all(not c.get("scripted") and c["request"].get("tools") for c in answered)
    assert sum(c["usage"]["output_tokens"] for c in answered) > 0
    run_info = json.loads((run_dir / "run.json").read_text())
    assert run_info["driver_usage"]["calls"] >= len(answered)
    assert run_info["end_reason"] == "agent_exit", run_info["end_reason"]
    assert not engine_servers(MODEL), "the engine outlived its run"
