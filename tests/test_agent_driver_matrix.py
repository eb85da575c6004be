"""Any agent with any driver: each of the five real CLIs x each driver backend (integration).

A cell: the CLI at its pinned version, launched by its adapter as in a run, talks to a real
gateway on 127.0.0.1 in its own wire protocol; the gateway's driver is one real backend
(openai Chat, openai Responses, anthropic, gemini, vllm's OpenAI-compatible path) whose
upstream is the project's fake provider, scripted for three tool turns (one of them with two
parallel calls) and then a final answer. The upstream answers in the shapes real providers send:
unique tool-call ids (OpenAI, Anthropic), no ids at all (Gemini's ``functionCall``), and ids
numbered per answer, the same on every turn (``call_0``: OpenAI-compatible servers such as
some vLLM versions). The CLIs stream or not as they do in a run, and the backend follows.

Each cell asserts that every tool result reached the upstream, in order, each under the id the
upstream gave its call (the gateway maps its own ids back), that the CLI never repeated a turn,
and that it ended by its own finish (exit 0 after the final answer). Before the gateway made
tool-call ids unique, claude-code on gemini looped until the deadline (2,021 calls in 300 s)
and openhands on gemini repeated its first command: those cells failed.

Cells run three at a time (the CLIs are mostly waiting on each other); the CLIs are installed
once per session (see test_agent_clis.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import autorl_agent_cli_common  # noqa: F401
import autorl_driver_anthropic  # noqa: F401
import autorl_driver_gemini  # noqa: F401
import autorl_driver_openai  # noqa: F401
import autorl_driver_vllm  # noqa: F401
import pytest

pytestmark = pytest.mark.slow


AGENTS = ("claude-code", "codex", "gemini-cli", "opencode", "openhands")
UPSTREAM_KEY = "sk-upstream-matrix"
TOKEN = "matrix-run-token"

# backend -> (driver name, driver options given the fake's URLs, how the upstream spells ids)
BACKENDS: dict[str, tuple[str, Callable[[Any], dict[str, Any]], str]] = {
    "openai-chat": (
        "openai/gpt-matrix",
        lambda f: {"base_url": f.openai_base_url, "env": {"OPENAI_API_KEY": UPSTREAM_KEY}},
        "unique",
    ),
    "openai-responses": (
        "openai/gpt-matrix",
        lambda f: {
            "api": "responses",
            "base_url": f.openai_base_url,
            "env": {"OPENAI_API_KEY": UPSTREAM_KEY},
        },
        "unique",
    ),
    "anthropic": (
        "anthropic/claude-matrix",
        lambda f: {"base_url": f.anthropic_base_url, "env": {"ANTHROPIC_API_KEY": UPSTREAM_KEY}},
        "unique",
    ),
    "gemini": (
        "gemini/gemini-matrix",
        lambda f: {"base_url": f.gemini_base_url, "env": {"GEMINI_API_KEY": UPSTREAM_KEY}},
        "none",
    ),
    "vllm": (
        "vllm/org/matrix-model",
        lambda f: {"base_url": f.openai_base_url, "env": {"VLLM_API_KEY": UPSTREAM_KEY}},
        "numbered",
    ),
}

# each CLI's shell tool and its arguments for a command, and how the session ends
SHELL: dict[str, tuple[str, Callable[[str], dict[str, Any]]]] = {
    "claude-code": ("Bash", lambda c: {"command": c}),
    "codex": ("exec_command", lambda c: {"cmd": c}),
    "gemini-cli": ("run_shell_command", lambda c: {"command": c}),
    "opencode": ("bash", lambda c: {"command": c, "description": "print a marker"}),
    "openhands": ("terminal", lambda c: {"command": c, "security_risk": "LOW"}),
}
DONE = "All three steps ran. Done."
TRUNCATED = "[Previous command outputs are truncated."
"""OpenHands' note in place of a command's output its terminal lost."""
MARKERS = ("mx-one", "mx-two", "mx-three", "mx-four")
STEPS = ((0,), (1, 2), (3,))
"""Tool turns: marker indexes; the second turn asks for two calls at once."""
RESULTS_BEFORE = {0: 0, 1: 1, 3: 2, 4: 3}
"""Tool results in the conversation -> the turn to answer (3 = the final answer)."""
NEXT_SPEAKER = json.dumps({"reasoning": "the task is complete", "next_speaker": "user"})
MAX_TOOL_REQUESTS = len(STEPS) + 3
"""Requests with tools a cell may make (steps + final + slack for a CLI's own retry)."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def tool_results(api: str, body: dict[str, Any]) -> list[tuple[str | None, str]]:
    """(call id, output) of every tool result in an upstream request, in conversation order."""
    found: list[tuple[str | None, str]] = []
    if api == "openai-chat":
        for m in body.get("messages") or []:
            if m.get("role") == "tool":
                found.append((m.get("tool_call_id"), _text(m.get("content"))))
    elif api == "openai-responses":
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                found.append((item.get("call_id"), _text(item.get("output"))))
    elif api == "anthropic":
        for m in body.get("messages") or []:
            for block in m.get("content") if isinstance(m.get("content"), list) else []:
                if block.get("type") == "tool_result":
                    found.append((block.get("tool_use_id"), _text(block.get("content"))))
    else:
        for c in body.get("contents") or []:
            for part in c.get("parts") or []:
                if "functionResponse" in part:
                    found.append((None, _text(part["functionResponse"].get("response"))))
    return found


def tool_calls(api: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(id, arguments) of the assistant's tool calls in an upstream request's history."""
    calls: list[tuple[str, str]] = []
    if api == "openai-chat":
        for m in body.get("messages") or []:
            calls += [(c.get("id"), _text(c.get("function"))) for c in m.get("tool_calls") or []]
    elif api == "openai-responses":
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call":
                calls.append((item.get("call_id"), _text(item.get("arguments"))))
    elif api == "anthropic":
        for m in body.get("messages") or []:
            for block in m.get("content") if isinstance(m.get("content"), list) else []:
                if block.get("type") == "tool_use":
                    calls.append((block.get("id"), _text(block.get("input"))))
    return calls


def marker_of(text: str) -> int | None:
    return next((i for i, m in enumerate(MARKERS) if m in text), None)


@dataclass
class Cell:
    agent: str
    backend: str
    tool_requests: int = 0
    anomalies: list[str] = field(default_factory=list)
    final_request: dict[str, Any] | None = None
    exit_code: int | None = None
    seconds: float = 0.0
    output: str = ""
    issued_ids: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, received: Any) -> Any:
        """The upstream's script: the turn follows from the tool results it has been sent."""
        from autorl_llm.testing import Answer

        body = received.body
        if not body.get("tools"):  # a side request: titles, Gemini CLI's next-speaker check
            return Answer(NEXT_SPEAKER)
        results = tool_results(received.api, body)
        with self.lock:
            self.tool_requests += 1
            turn = RESULTS_BEFORE.get(len(results))
            if turn is None:
                self.anomalies.append(f"{len(results)} tool results: {results!r}")
                turn = len(STEPS)
            if turn == len(STEPS):
                self.final_request = {"api": received.api, "body": body}
        if turn == len(STEPS):
            if self.agent == "openhands":  # it ends by calling its finish tool
                return Answer("", tool_calls=(("finish", {"message": DONE}),))
            return Answer(DONE)
        name, arguments = SHELL[self.agent]
        calls = tuple((name, arguments(f"echo {MARKERS[i]}")) for i in STEPS[turn])
        return Answer(f"Step {turn + 1}.", tool_calls=calls)


def run_cell(agent: str, backend: str, root: Path) -> Cell:
    """One CLI against one backend, through a real gateway; returns what happened."""
    from autorl_agent_cli_common.command import cli_agents
    from autorl_llm.drivers import open_driver
    from autorl_llm.gateway import Gateway
    from autorl_llm.testing import FakeProvider
    from autorl_testing import agent_context

    cell = Cell(agent, backend)
    where = root / f"{agent}--{backend}"
    driver_name, options, ids = BACKENDS[backend]
    with FakeProvider(api_key=UPSTREAM_KEY, responder=cell.respond, ids=ids) as fake:
        driver = open_driver(driver_name, max_attempts=2, initial_delay_s=0, **options(fake))
        with Gateway(driver, token=TOKEN, log_path=where / "driver_calls.jsonl") as gateway:
            ctx = agent_context(
                where, task="matrix", description="Run three shell steps.",
                instructions="Run the shell commands you are asked to run, then stop.",
                token=TOKEN, max_submissions=1, driver=driver_name, gateway_url=gateway.url,
            )  # fmt: skip
            workspace = ctx.workspace
            adapter = cli_agents([agent])[agent]
            launch = adapter.launch(ctx)
            tmp = where / "tmp"  # as a run's sandbox gives it: OpenCode unpacks a 5.5 MB
            tmp.mkdir()  # native library into $TMPDIR at each start and never removes it
            env = {
                "TMPDIR": str(tmp),
                "AUTORL_TOKEN": TOKEN,
                "AUTORL_WORKSPACE": str(workspace),
                "AUTORL_GATEWAY_URL": gateway.url,
                **launch.env,
            }
            started = time.monotonic()
            try:
                proc = subprocess.run(
                    list(launch.argv),
                    env=env,
                    cwd=workspace,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=240,
                )
                cell.exit_code, cell.output = proc.returncode, proc.stdout + proc.stderr
            except subprocess.TimeoutExpired as exc:
                out = (exc.stdout or b"") + (exc.stderr or b"")
                cell.output = out.decode(errors="replace") if isinstance(out, bytes) else out
                cell.anomalies.append("the CLI did not finish within 240 s")
            finally:  # as a run ends: what the launch made outside it (OpenHands' tmux dir) goes
                (where / "run").mkdir(exist_ok=True)
                adapter.collect(ctx, where / "run")
            cell.seconds = time.monotonic() - started
        cell.issued_ids = list(fake.issued_ids)
        assert all(
            r.headers.get("authorization", "").endswith(UPSTREAM_KEY)
            or r.headers.get("x-api-key") == UPSTREAM_KEY
            or r.headers.get("x-goog-api-key") == UPSTREAM_KEY
            for r in fake.requests
        )
    return cell


@pytest.fixture(scope="module")
def matrix(
    installed_clis: dict[str, float], tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], Cell]:
    """Every cell, three at a time (the whole matrix: about 2.4 minutes two at a time beside two
    other test workers on 2 cores)."""
    root = tmp_path_factory.mktemp("matrix")
    cells = [(a, b) for a in AGENTS for b in BACKENDS]
    workers = int(os.environ.get("AUTORL_MATRIX_WORKERS", "3"))
    started = time.monotonic()
    with ThreadPoolExecutor(workers) as pool:
        done = dict(zip(cells, pool.map(lambda c: run_cell(*c, root), cells), strict=True))
    print(f"agent x driver matrix: {len(cells)} cells in {time.monotonic() - started:.0f} s")
    for (agent, backend), cell in done.items():
        print(f"  {agent:12} x {backend:17} {cell.seconds:6.1f} s, {cell.tool_requests} calls")
    return done


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("agent", AGENTS)
def test_cell(matrix: dict[tuple[str, str], Cell], agent: str, backend: str) -> None:
    cell = matrix[(agent, backend)]
    tail = cell.output[-3000:]
    assert not cell.anomalies, f"{cell.anomalies}\n{tail}"
    assert cell.exit_code == 0, tail
    assert cell.final_request is not None, f"the final answer was never asked for\n{tail}"
    assert cell.tool_requests <= MAX_TOOL_REQUESTS, f"{cell.tool_requests} tool turns\n{tail}"
    api, body = cell.final_request["api"], cell.final_request["body"]
    results = tool_results(api, body)
    order = [marker_of(out) for _, out in results]
    if api == "gemini":  # pairs results with calls by position: the driver restores call order
        assert order == [0, 1, 2, 3], results
        return
    # OpenHands runs a turn's two commands in one terminal and can lose the first one's output
    # to the second (its "[Previous command outputs are truncated...]": seen once, under load):
    # that result is checked by its id alone; every other result carries its command's marker
    lost = [out for _, out in results if marker_of(out) is None]
    assert all(agent == "openhands" and TRUNCATED in out for out in lost), results
    assert len(results) == len(MARKERS), results
    history = tool_calls(api, body)
    ids = [call_id for call_id, _ in history]
    assert ids == cell.issued_ids[: len(ids)] and len(ids) == len(MARKERS), (ids, cell.issued_ids)
    start = 0
    for step in STEPS:  # per turn (ids numbered per answer repeat across turns)
        turn = slice(start, start + len(step))
        start += len(step)
        marker_by_id = {call_id: marker_of(arguments) for call_id, arguments in history[turn]}
        # every call of the turn answered once, in its turn, under the id the upstream gave it
        # (in any order: a CLI may send parallel results as they finish, as Claude Code does)
        answered = [call_id for call_id, _ in results[turn]]
        assert sorted(answered) == sorted(marker_by_id), (answered, history)
        for call_id, out in results[turn]:
            if marker_of(out) is not None:
                assert marker_by_id[call_id] == marker_of(out), (call_id, out, history)
