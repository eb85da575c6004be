"""Resource limits for one agent: a cgroup of its own (v1 controllers or the v2 hierarchy).

The cgroup is created below the harness's own cgroup, so limits set on the harness (a CI
job's, a container's) still apply. The sandbox's launcher writes its PID into ``procs`` files
before it execs the sandbox, so every process the agent ever starts is inside. At the end,
every process left in the cgroup is killed and the cgroup removed.

v1 (this project's CI machines): ``memory``, ``pids`` and ``cpu`` controllers, each its own
hierarchy. v2 (most current hosts): one hierarchy; controllers must be enabled in the parent's
``cgroup.subtree_control``, which the kernel only allows when the parent has no processes
of its own, so the harness first moves itself into a ``harness`` leaf (what container runtimes
do in a delegated cgroup).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # standard library only at run time: the reaper imports this module
    from autorl.types import Limits

ROOT = Path("/sys/fs/cgroup")
CPU_PERIOD_US = 100_000


def _own_paths() -> dict[str, str]:
    """controller -> this process's cgroup path (``""`` key: the v2 hierarchy)."""
    found: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for name in controllers.split(",") if controllers else [""]:
            found[name] = path
    return found


def cgroup_version() -> int | None:
    """2 for a pure v2 host, 1 where the v1 controllers are mounted, None otherwise."""
    if (ROOT / "cgroup.controllers").is_file():
        return 2
    if (ROOT / "memory" / "tasks").exists() or (ROOT / "pids" / "tasks").exists():
        return 1
    return None


@dataclass
class AgentCgroup:
    """The cgroup(s) of one sandboxed agent."""

    name: str
    limits: Limits
    version: int | None = None
    dirs: list[Path] = field(default_factory=list)

    def wanted(self) -> list[str]:
        controllers = []
        if self.limits.memory_bytes:
            controllers.append("memory")
        if self.limits.pids:
            controllers.append("pids")
        if self.limits.cpus:
            controllers.append("cpu")
        return controllers

    def create(self) -> list[Path]:
        """Make the cgroup(s) and set the limits; return the ``cgroup.procs`` files to join."""
        wanted = self.wanted()
        if not wanted:
            return []
        self.version = cgroup_version()
        try:
            if self.version == 1:
                self._create_v1(wanted)
            elif self.version == 2:
                self._create_v2(wanted)
            else:
                raise OSError("no cgroup file system under /sys/fs/cgroup")
        except OSError as exc:
            from autorl.errors import ConfigError

            self.remove()
            raise ConfigError(
                f"cannot set the agent's resource limits ({', '.join(wanted)}): {exc}",
                hint="run as root (or in a delegated cgroup), or lift the limits in the run "
                'config: [limits] memory_gb = "none", pids = "none", cpus unset',
            ) from None
        return [d / "cgroup.procs" for d in self.dirs]

    def _create_v1(self, wanted: list[str]) -> None:
        own = _own_paths()
        for controller in wanted:
            base = ROOT / controller
            if not base.is_dir():
                raise OSError(f"the v1 {controller} controller is not mounted at {base}")
            parent = base / own.get(controller, "/").lstrip("/")
            path = parent / self.name
            path.mkdir(exist_ok=True)
            self.dirs.append(path)
            if controller == "memory":
                (path / "memory.limit_in_bytes").write_text(str(self.limits.memory_bytes))
                swap = path / "memory.memsw.limit_in_bytes"
                if swap.exists():  # no escape into swap
                    swap.write_text(str(self.limits.memory_bytes))
            elif controller == "pids":
                (path / "pids.max").write_text(str(self.limits.pids))
            elif controller == "cpu":
                (path / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
                quota = int(float(self.limits.cpus or 0) * CPU_PERIOD_US)
                (path / "cpu.cfs_quota_us").write_text(str(max(quota, 1000)))

    def _create_v2(self, wanted: list[str]) -> None:
        own = ROOT / _own_paths().get("", "/").lstrip("/")
        available = (own / "cgroup.controllers").read_text().split()
        missing = [c for c in wanted if c not in available]
        if missing:  # the kernel would answer "No such file or directory"
            raise OSError(
                f"the {', '.join(missing)} controller(s) are not delegated to this process's "
                f"cgroup {own} (it has: {', '.join(available) or 'none'}); its parent's "
                "cgroup.subtree_control must enable them"
            )
        if own != ROOT:
            leaf = own / "harness"
            leaf.mkdir(exist_ok=True)
            for pid in (own / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    (leaf / "cgroup.procs").write_text(pid)
        enable = " ".join(f"+{c}" for c in wanted)
        (own / "cgroup.subtree_control").write_text(enable)
        path = own / self.name
        path.mkdir(exist_ok=True)
        self.dirs.append(path)
        if self.limits.memory_bytes:
            (path / "memory.max").write_text(str(self.limits.memory_bytes))
            swap = path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
        if self.limits.pids:
            (path / "pids.max").write_text(str(self.limits.pids))
        if self.limits.cpus:
            quota = max(int(float(self.limits.cpus) * CPU_PERIOD_US), 1000)
            (path / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")

    def pids(self) -> list[int]:
        return cgroup_pids(self.dirs)

    def peak_memory(self) -> int | None:
        for directory in self.dirs:
            for name in ("memory.max_usage_in_bytes", "memory.peak"):
                with contextlib.suppress(OSError, ValueError):
                    return int((directory / name).read_text().strip())
        return None

    def oom_kills(self) -> int:
        for directory in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                text = (directory / "memory.events").read_text()
                for line in text.splitlines():
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
            with contextlib.suppress(OSError, ValueError):
                text = (directory / "memory.oom_control").read_text()
                for line in text.splitlines():
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
        return 0

    def kill_all(self, timeout: float = 5.0) -> None:
        """SIGKILL every process left in the cgroup until it is empty."""
        kill_cgroup(self.dirs, timeout)

    def remove(self) -> None:
        for directory in reversed(self.dirs):
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
        self.dirs = []


def cgroup_pids(dirs: list[Path]) -> list[int]:
    """The processes in the cgroup ``dirs`` (one per v1 controller, or the v2 one)."""
    found: set[int] = set()
    for directory in dirs:
        with contextlib.suppress(OSError):
            found.update(int(p) for p in (directory / "cgroup.procs").read_text().split())
    return sorted(found)


def kill_cgroup(dirs: list[Path], timeout: float = 5.0) -> None:
    """SIGKILL every process in the cgroup ``dirs`` until it is empty (or ``timeout``)."""
    if not dirs:
        return
    kill_file = dirs[0] / "cgroup.kill"
    if kill_file.exists():
        with contextlib.suppress(OSError):
            kill_file.write_text("1")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in cgroup_pids(dirs) if p != os.getpid()]
        if not left:
            return
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def join_command(procs: list[Path], argv: list[str]) -> list[str]:
    """``sh`` writes its PID into each ``procs`` file, then execs ``argv`` (no preexec_fn,
    which is unsafe in the threaded harness)."""
    if not procs:
        return argv
    script = (
        'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; '
        'n=$((n-1)); done; exec "$@"'
    )
    return ["/bin/sh", "-c", script, "sh", str(len(procs)), *map(str, procs), *argv]
