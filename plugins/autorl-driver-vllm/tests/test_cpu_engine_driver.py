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

import autorl_model_smollm2  # noqa: F401
import autorl_model_tiny  # noqa: F401
import autorl_task_gsm8k  # noqa: F401
import psutil
import pytest
from autorl_agent_react.tools import TOOL_SPECS
from autorl_driver_vllm.driver import VLLMDriver
from autorl_hf.engine.env import find_engine
from autorl_llm.drivers import ChatRequest
from autorl_llm.drivers.errors import DriverConfigError

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        find_engine() is None and not os.environ.get("AUTORL_REQUIRE_ENGINE"),
        reason="the vLLM CPU engine is not built (autorl engine prepare); "
        "AUTORL_REQUIRE_ENGINE=1 makes this a failure",
    ),
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


def test_serve_cpu_answers_chat_and_tool_requests_and_close_ends_the_engine() -> None:
    driver = VLLMDriver(MODEL, env={}, serve="cpu", timeout_s=300)
    try:
        assert driver.server is not None and driver.server.server is None  # started on use
        reply = driver.chat(
            ChatRequest.from_messages(
                [{"role": "user", "content": "What is the capital of France?"}],
                max_tokens=24,
                temperature=0.0,
            )
        )
        assert reply.text.strip() and reply.usage.output_tokens > 0 and reply.cost_usd == 0.0
        assert not reply.scripted
        # an agent's every call offers tools: vLLM refuses them without a tool-call parser
        tooled = driver.chat(
            ChatRequest.from_messages(
                [{"role": "user", "content": "List the files here with the shell tool."}],
                max_tokens=48,
                temperature=0.0,
                tools=TOOL_SPECS,  # what the react agent offers
            )
        )
        assert tooled.text.strip() or tooled.tool_calls
        group = engine_servers(MODEL)
        assert len({os.getpgid(p.pid) for p in group}) == 1, group  # one engine
        for proc in group:  # its API is a unix socket; its message queues stay on loopback
            for conn in proc.net_connections(kind="inet"):
                assert conn.status != psutil.CONN_LISTEN or conn.laddr.ip == "127.0.0.1", conn
    finally:
        driver.close()
    deadline = time.monotonic() + 20
    while engine_servers(MODEL) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not engine_servers(MODEL)


def test_the_react_agent_runs_a_whole_run_driven_by_smollm2_on_the_engine(
    tmp_path: Path,
) -> None:
    """The first run of this project with a real model as the agent's brain and no network:
    every call answered by SmolLM2 through the metering gateway, the engine gone with the run."""
    command = [
        AUTORL, "run", "--task", "gsm8k", "--model", "tiny", "--agent", "react",
        "--driver", f"vllm/{MODEL}", "--driver-option", "serve=cpu",
        "--agent-option", "max_turns=3", "--agent-option", "max_tokens=96",
        "--task-option", "train_size=20", "--task-option", "eval_size=4",
        "--budget", "420", "--runs-dir", str(tmp_path / "runs"), "--run-id", "brain",
    ]  # fmt: skip
    offline = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(command, env=offline, cwd=tmp_path, capture_output=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:].decode(errors="replace")
    run_dir = tmp_path / "runs" / "brain"
    calls = [json.loads(line) for line in (run_dir / "driver_calls.jsonl").read_text().splitlines()]
    answered = [c for c in calls if not c.get("error")]
    assert answered, calls
    assert all(not c.get("scripted") for c in answered)
    assert sum(c["usage"]["output_tokens"] for c in answered) > 0
    run_info = json.loads((run_dir / "run.json").read_text())
    assert run_info["driver_usage"]["calls"] >= len(answered)
    assert run_info["end_reason"] == "agent_exit", run_info["end_reason"]
    assert not engine_servers(MODEL), "the engine outlived its run"
