"""The local sandbox: clean environment, and nothing survives termination."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from autorl.sandbox.local import LocalSandbox
from autorl.types import AgentLaunch

STUBBORN = textwrap.dedent(
    """
    import os, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pids = []
    for i in range(3):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            if i == 2:  # escape the process group and the parent: setsid + double fork
                os.setsid()
                if os.fork():
                    os._exit(0)
            while True:
                time.sleep(0.1)
        pids.append(pid)
    open("ready", "w").write("ok")
    while True:
        time.sleep(0.1)
    """
)


def _wait_for(path: Path, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_agent_that_ignores_sigterm_and_forks_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(STUBBORN)
    sandbox = LocalSandbox(grace_seconds=0.5)
    proc = sandbox.start(
        AgentLaunch(argv=(sys.executable, "agent.py")),
        cwd=tmp_path,
        home=tmp_path / "home",
        log_path=tmp_path / "agent.log",
    )
    _wait_for(tmp_path / "ready")
    time.sleep(0.3)
    marked = proc.alive_processes()
    assert len(marked) >= 5, marked  # reaper, agent, 3 children (one detached)
    proc.terminate(grace=0.5)
    time.sleep(0.2)
    survivors = [
        p for p in marked if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
    ]
    assert survivors == []
    assert proc.alive_processes() == []


def test_agent_environment_is_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-harness-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    monkeypatch.setenv("AUTORL_INTERNAL", "harness-only")
    script = "import os, json; json.dump(dict(os.environ), open('env.json', 'w'))"
    proc = LocalSandbox().start(
        AgentLaunch(argv=(sys.executable, "-c", script), env={"AUTORL_TOKEN": "t"}),
        cwd=tmp_path,
        home=tmp_path / "home",
        log_path=tmp_path / "agent.log",
    )
    assert proc.wait(30) == 0
    import json

    env = json.loads((tmp_path / "env.json").read_text())
    assert "OPENAI_API_KEY" not in env and "ANTHROPIC_API_KEY" not in env
    assert "AUTORL_INTERNAL" not in env
    assert "sk-fake" not in json.dumps(env)
    assert env["HOME"] == str(tmp_path / "home")
    assert env["AUTORL_TOKEN"] == "t"
    assert os.path.realpath(env["TMPDIR"]).startswith(str(tmp_path))


def test_exit_code_and_log(tmp_path: Path) -> None:
    proc = LocalSandbox().start(
        AgentLaunch(argv=(sys.executable, "-c", "print('hello'); raise SystemExit(3)")),
        cwd=tmp_path,
        home=tmp_path / "home",
        log_path=tmp_path / "agent.log",
    )
    assert proc.wait(30) == 3
    assert "hello" in (tmp_path / "agent.log").read_text()
