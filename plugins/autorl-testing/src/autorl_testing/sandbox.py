"""What sandbox tests share: a request for a throwaway run directory, and hostile agents.

Used by the core's sandbox tests and by sandbox plugins' own tests (``autorl-sandbox-docker``):
the same stubborn process tree and the same harness-death scenario for every sandbox.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from autorl.types import AgentLaunch, Limits, SandboxRequest

STUBBORN = textwrap.dedent(
    """
    import os, signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for i in range(3):
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            if i == 2:  # escape the process group and the parent: setsid + double fork
                os.setsid()
                if os.fork():
                    os._exit(0)
            while True:
                time.sleep(0.1)
    open("ready", "w").write("ok")
    while True:
        time.sleep(0.1)
    """
)
"""Ignores SIGTERM, forks three children (one detached with setsid + double fork), writes
``ready``: what ``terminate()`` must leave nothing of."""

DAEMON = textwrap.dedent(
    """
    import os, time
    if os.fork() == 0:
        os.setsid()
        if os.fork():
            os._exit(0)
        while True:
            open("heartbeat", "a").write("x")
            time.sleep(0.1)
    while True:
        time.sleep(1)
    """
)
"""A detached daemon appending to ``heartbeat``: it must stop when the harness dies."""

HARNESS = """
import sys, time
from pathlib import Path
from autorl.registry import get_registry
from autorl_testing.sandbox import DAEMON, sandbox_request
box = get_registry().create("sandbox", {sandbox!r})
proc = box.start(sandbox_request(Path({tmp!r}), DAEMON, run_id={run_id!r}))
print(getattr(proc, "id", proc.pid), flush=True)
time.sleep(600)
"""
"""``python -c HARNESS.format(sandbox=..., tmp=..., run_id=...)``: a harness that starts the
daemon in a sandbox, prints a line, and waits to be killed (``kill -9``)."""


def sandbox_request(
    tmp_path: Path,
    code: str,
    env: dict[str, str] | None = None,
    limits: Limits | None = None,
    run_id: str = "test",
) -> SandboxRequest:
    """A run directory under ``tmp_path`` (workspace with ``agent.py`` = ``code`` and a
    read-only ``data/``, a harness record beside it) and the request that runs ``agent.py``
    with the agent runtime's Python."""
    from autorl_sandbox_common.runtime import build_runtime

    runtime = build_runtime()
    run = tmp_path / "run"
    workspace = run / "workspace"
    (workspace / "data").mkdir(parents=True, exist_ok=True)
    (workspace / "data" / "train.jsonl").write_text("{}\n")
    (workspace / "agent.py").write_text(code)
    (run / "submissions.jsonl").write_text("harness record\n")
    return SandboxRequest(
        launch=AgentLaunch(argv=(str(runtime.python), "agent.py"), env=env or {}),
        workspace=workspace,
        home=run / "home",
        log_path=run / "agent.log",
        state_dir=run / "sandbox",
        read_only=runtime.read_only,
        read_only_inside=(workspace / "data",),
        limits=limits or Limits(),
        run_id=run_id,
    )
