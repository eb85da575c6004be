"""The ``local`` sandbox, for development only: a separate session, a clean environment, and a
reaper that leaves nothing.

It is NOT a boundary: the agent runs as the harness's user and sees its whole file system (run
records, held-out data, harness code) and its network. Runs in it say so in their manifest,
report and results line, and their scores are not comparable (docs/security.md). It gets only
the variables the adapter declares plus a minimal base (PATH, HOME, LANG, TMPDIR).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
from autorl_sandbox_common.logpipe import LogPipe
from autorl_sandbox_common.reaping import kill_until_gone

from autorl.types import AgentLaunch, SandboxRequest

BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
SANDBOX_MARK = "AUTORL_SANDBOX_ID"


def clean_environment(launch: AgentLaunch, *, home: Path, tmp: Path) -> dict[str, str]:
    """Build the agent's environment from scratch: never inherit the harness's variables."""
    env = {
        "PATH": BASE_PATH,
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "PYTHONUNBUFFERED": "1",
    }
    env.update({str(k): str(v) for k, v in launch.env.items()})
    return env


class LocalProcess:
    """Handle on the reaper process that supervises the agent."""

    def __init__(
        self, popen: subprocess.Popen[bytes], mark: str, log: LogPipe | None = None
    ) -> None:
        self._popen = popen
        self._log = log
        self.pid = popen.pid
        self.mark = mark
        self.stats: dict[str, Any] | None = None
        """Nothing measured: the local sandbox has no cgroup (AgentProcess.stats)."""

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
        if self._log is not None:
            self._log.join()
        return self._popen.poll()

    def kill_marked(self) -> int:
        """Last resort: kill any process still carrying this sandbox's mark in its environment."""
        return kill_until_gone(self._marked, lambda _: time.sleep(0.05))

    def _marked(self) -> list[psutil.Process]:
        found = []
        for proc in psutil.process_iter(["pid"]):
            try:
                if proc.pid != os.getpid() and proc.environ().get(SANDBOX_MARK) == self.mark:
                    found.append(proc)
            except psutil.Error:
                continue
        return found

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
    isolated = False

    def __init__(self, grace_seconds: float = 5.0) -> None:
        self.grace_seconds = grace_seconds

    def check(self) -> None:
        """Nothing to install; nothing isolated either."""

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "isolated": False,
            "separate_uid": False,
            "mode": "development only: no boundary, scores not comparable",
        }

    def start(self, request: SandboxRequest) -> LocalProcess:
        launch, home, cwd = request.launch, request.home, request.workspace
        home.mkdir(parents=True, exist_ok=True)
        tmp = home / "tmp"
        tmp.mkdir(exist_ok=True)
        env = clean_environment(launch, home=home, tmp=tmp)
        mark = os.urandom(8).hex()
        env[SANDBOX_MARK] = mark
        env["AUTORL_REAPER_GRACE"] = str(self.grace_seconds)
        argv = [sys.executable, "-I", "-m", "autorl_sandbox_local.reaper", "--", *launch.argv]
        log = LogPipe(request.log_path).start()
        try:
            popen = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log.write_fd,
                stderr=log.write_fd,
                start_new_session=True,
            )
        finally:
            log.close_writer()
        return LocalProcess(popen, mark, log)
