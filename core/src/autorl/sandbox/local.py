"""The ``local`` sandbox: a separate session, a clean environment, and a reaper that leaves nothing.

Isolation here is by process and environment, not by kernel namespaces: the agent runs as the
same user. It gets only the variables the adapter declares plus a minimal base (PATH, HOME, LANG,
TMPDIR), so no host secret or harness-only value reaches it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from autorl.types import AgentLaunch

BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
SANDBOX_MARK = "AUTORL_SANDBOX_ID"


def clean_environment(launch: AgentLaunch, *, home: Path, tmp: Path) -> dict[str, str]:
    """Build the agent's environment from scratch: never inherit the harness's variables."""
    python_bin = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{python_bin}:{BASE_PATH}",
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "PYTHONUNBUFFERED": "1",
    }
    env.update({str(k): str(v) for k, v in launch.env.items()})
    return env


class LocalProcess:
    """Handle on the reaper process that supervises the agent."""

    def __init__(self, popen: subprocess.Popen[bytes], mark: str) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.mark = mark

    def poll(self) -> int | None:
        return self._popen.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            return self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def terminate(self, grace: float = 5.0) -> int | None:
        """Ask the reaper to stop everything; then kill the session and any marked straggler."""
        if self._popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._popen.send_signal(signal.SIGTERM)
            self.wait(grace + 3.0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        if self._popen.poll() is None:
            self._popen.kill()
        self.wait(2.0)
        self.kill_marked()
        return self._popen.poll()

    def kill_marked(self) -> int:
        """Last resort: kill any process still carrying this sandbox's mark in its environment."""
        killed = 0
        for _ in range(20):
            found = []
            for proc in psutil.process_iter(["pid"]):
                try:
                    if proc.pid != os.getpid() and proc.environ().get(SANDBOX_MARK) == self.mark:
                        found.append(proc)
                except psutil.Error:
                    continue
            if not found:
                break
            for proc in found:
                try:
                    proc.kill()
                    killed += 1
                except psutil.Error:
                    pass
            time.sleep(0.05)
        return killed

    def alive_processes(self) -> list[int]:
        """PIDs of processes still marked as this sandbox's (used by tests and the supervisor)."""
        alive = []
        for proc in psutil.process_iter(["pid"]):
            try:
                if proc.environ().get(SANDBOX_MARK) == self.mark and proc.status() != "zombie":
                    alive.append(proc.pid)
            except psutil.Error:
                continue
        return alive


class LocalSandbox:
    name = "local"

    def __init__(self, grace_seconds: float = 5.0) -> None:
        self.grace_seconds = grace_seconds

    def start(self, launch: AgentLaunch, *, cwd: Path, home: Path, log_path: Path) -> LocalProcess:
        home.mkdir(parents=True, exist_ok=True)
        tmp = home / "tmp"
        tmp.mkdir(exist_ok=True)
        env = clean_environment(launch, home=home, tmp=tmp)
        mark = os.urandom(8).hex()
        env[SANDBOX_MARK] = mark
        env["AUTORL_REAPER_GRACE"] = str(self.grace_seconds)
        argv = [sys.executable, "-I", "-m", "autorl.sandbox.reaper", "--", *launch.argv]
        log = open(log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            popen = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        return LocalProcess(popen, mark)
