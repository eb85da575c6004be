"""What sandbox tests share: a request for a throwaway run directory, and hostile agents.

Used by the core's sandbox tests and by sandbox plugins' own tests (``autorl-sandbox-docker``):
the same stubborn process tree and the same harness-death scenario for every sandbox.
"""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Collection
from pathlib import Path

from autorl.types import AgentLaunch, Forward, Limits, SandboxRequest

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

LIMITS_PROBE = textwrap.dedent(
    """
    import json, subprocess, sys, time
    out = {}
    hog = "b = bytearray(600 << 20); b[::4096] = b'x' * len(b[::4096])"
    r = subprocess.run([sys.executable, "-c", hog])
    out["memory_child"] = r.returncode
    procs, n = [], 0
    try:
        for _ in range(200):
            procs.append(subprocess.Popen(["sleep", "30"])); n += 1
    except OSError:
        pass
    for p in procs:
        p.kill()
    out["forked"] = n
    json.dump(out, open("limits.json", "w"))
    """
)
"""An agent that tests its limits: a child that touches 600 MiB (``memory_child``: its exit
status, -9 when the sandbox's memory limit killed it) and up to 200 processes (``forked``: how
many started before the pids limit refused one), written to ``limits.json`` in the workspace.
Run it with limits below both (e.g. 300 MiB, 64 pids)."""

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
    forwards: tuple[Forward, ...] = (),
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
    (run / "sandbox").mkdir(exist_ok=True)
    return SandboxRequest(
        launch=AgentLaunch(argv=(str(runtime.python), "agent.py"), env=env or {}),
        workspace=workspace,
        home=run / "home",
        log_path=run / "agent.log",
        state_dir=run / "sandbox",
        read_only=runtime.read_only,
        read_only_inside=(workspace / "data",),
        limits=limits or Limits(),
        forwards=forwards,
        run_id=run_id,
    )


def sandbox_cgroups(run_id: str = "") -> list[Path]:
    """The cgroup directories of ``run_id``'s isolated sandboxes still on this machine (named
    ``autorl-<run id>-<random>``; every run's without one), in every v1 controller or the v2
    hierarchy."""
    prefix = f"autorl-{run_id}-" if run_id else "autorl-"
    found = []
    for dirpath, dirnames, _ in os.walk("/sys/fs/cgroup"):
        found += [Path(dirpath, d) for d in dirnames if d.startswith(prefix)]
    return found


def cgroups_gone(run_id: str, before: Collection[Path] = (), timeout: float = 40.0) -> list[Path]:
    """Wait until ``run_id``'s sandbox cgroups (other than those ``before`` the run, which an
    older version or another test may have left) are removed; those still there after
    ``timeout``. A killed run's reaper needs a moment, and keeps removing for up to 30 s
    (``autorl_sandbox_isolated.reaper.REMOVE_S``): the default waits that long and 10 s more
    (15 s was too short once on 2 loaded cores, a campaign cell's cgroup removed later)."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in sandbox_cgroups(run_id) if p not in before]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)
