"""Run one untrusted Python program in its own confined process and report a verdict.

Per program: a fresh temp directory as cwd (deleted afterwards), a new session (so the whole
process group can be killed), a minimal environment, stdin at /dev/null, resource limits, a
network namespace of its own and, when the harness runs as root, a dedicated unprivileged uid
(so RLIMIT_NPROC holds, host files stay read-only and leftovers can be found by uid). After a
wall-clock timeout the group is killed; psutil then kills any straggler that escaped the group.
What the child could actually apply is returned in :attr:`Outcome.flags`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from autorl_sandbox_common.reaping import kill_until_gone

RUNNER = Path(__file__).with_name("runner.py")
UID_BASE = 61000
"""Sandbox uids are ``UID_BASE + slot``: unused by any account, one per parallel worker."""


@dataclass(frozen=True)
class Limits:
    """Per-program limits. ``cpu_s`` defaults to the wall timeout plus one second."""

    timeout_s: float = 10.0
    memory_mb: int = 1024
    file_size_mb: int = 16
    nproc: int = 32
    nofile: int = 64
    cpu_s: int | None = None

    def for_child(self) -> dict[str, Any]:
        limits = asdict(self)
        limits["cpu_s"] = self.cpu_s or int(self.timeout_s) + 1
        return limits


@dataclass(frozen=True)
class Outcome:
    """``status``: ``passed``, ``failed`` (an exception or an early exit) or ``timeout``."""

    status: str
    detail: str
    seconds: float
    flags: dict[str, bool] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def minimal_env(home: Path) -> dict[str, str]:
    """No secrets, no proxies, no PYTHON* variables from the harness."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",
    }


def sandbox_uid(slot: int) -> int | None:
    """The uid a worker slot runs programs as; None when we are not root (no user switch)."""
    return UID_BASE + slot if os.geteuid() == 0 else None


UID_SLOTS = 1024
"""How many sandbox uids (``UID_BASE`` on) programs on one machine may hold at once."""
LOCK_DIR = Path("/run/autorl-code-sandbox")
"""Root's lock files, one per uid in use (``/run``: root-owned, emptied at boot)."""


@contextlib.contextmanager
def claimed_uid(slot: int) -> Iterator[int | None]:
    """A sandbox uid no other process on this machine is using, held (``flock``) while the
    program runs: the first free one from ``UID_BASE + slot`` on. Two evaluations at once in
    separate processes (a campaign's pool, parallel test workers) would otherwise share
    ``UID_BASE + 0``, and each one's cleanup by uid would kill the other's programs. ``None``
    when we are not root (no user switch, nothing to share)."""
    if sandbox_uid(slot) is None:
        yield None
        return
    LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    info = LOCK_DIR.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0:
        raise RuntimeError(f"{LOCK_DIR} is not a root-owned directory: remove it and retry")
    for attempt in range(UID_SLOTS * 2):
        uid = UID_BASE + (slot + attempt) % UID_SLOTS
        fd = os.open(LOCK_DIR / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if attempt >= UID_SLOTS:
                time.sleep(0.05)  # every uid busy: wait for one
            continue
        try:
            yield uid
        finally:
            os.close(fd)  # releases the lock
        return
    raise RuntimeError(f"no free sandbox uid among {UID_SLOTS} after waiting")


def kill_leftovers(pgid: int, uid: int | None) -> int:
    """SIGKILL the process group, then every process still running as ``uid`` (stragglers that
    started their own session). Returns how many stragglers psutil had to kill."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    if uid is None:
        return 0
    import psutil

    def stragglers() -> list[psutil.Process]:
        uids = psutil.process_iter(["uids"])
        return [p for p in uids if p.info["uids"] and p.info["uids"].real == uid]

    return kill_until_gone(stragglers, lambda found: psutil.wait_procs(found, timeout=0.5))


def _verdict(result_file: Path, nonce: str) -> tuple[dict[str, bool], str | None, str]:
    """Flags (first line) and the nonce-tagged verdict written by the runner."""
    try:
        lines = result_file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}, None, ""
    flags: dict[str, bool] = {}
    if lines:
        try:
            flags = {k: bool(v) for k, v in json.loads(lines[0]).items()}
        except (ValueError, AttributeError):
            flags = {}
    for line in lines[1:]:
        if line.startswith(nonce + " "):
            status, _, detail = line[len(nonce) + 1 :].partition(" ")
            return flags, status, detail
    return flags, None, ""


def run_program(
    program: str,
    limits: Limits | None = None,
    *,
    slot: int = 0,
    isolate_network: bool = True,
    root_dir: Path | None = None,
) -> Outcome:
    """Execute ``program`` (a complete Python source) and tell whether it ran to the end."""
    with claimed_uid(slot) as uid:
        return _run(program, limits or Limits(), uid, isolate_network, root_dir)


def _run(
    program: str, limits: Limits, uid: int | None, isolate_network: bool, root_dir: Path | None
) -> Outcome:
    started = time.monotonic()
    host_dir = Path(tempfile.mkdtemp(prefix="autorl-code-host-", dir=root_dir))
    work = host_dir / "work"
    try:
        work.mkdir(mode=0o700)
        (work / "program.py").write_text(program, encoding="utf-8")
        result_file = host_dir / "result.txt"
        fd = os.open(result_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        if uid is not None:
            os.chmod(host_dir, 0o711)  # the sandbox user may enter work/, not list the rest
            for path in (work, work / "program.py"):
                os.chown(path, uid, uid)
        nonce = secrets.token_hex(16)
        cfg = {
            "result_fd": fd,
            "uid": uid,
            "isolate_network": isolate_network,
            "limits": limits.for_child(),
        }
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", str(RUNNER), json.dumps(cfg)],
                cwd=work,
                env=minimal_env(work),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(fd,),
                start_new_session=True,
                close_fds=True,
            )
        finally:
            os.close(fd)
        timed_out = False
        try:
            assert proc.stdin is not None
            proc.stdin.write((nonce + "\n").encode())
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        kill_leftovers(proc.pid, uid)
        proc.wait()
        flags, status, detail = _verdict(result_file, nonce)
        seconds = time.monotonic() - started
        if timed_out:
            return Outcome("timeout", f"killed after {limits.timeout_s:g} s", seconds, flags)
        if status in ("passed", "failed"):
            return Outcome(status, detail, seconds, flags)
        code = proc.returncode
        reason = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
        if code == -signal.SIGXFSZ:
            reason += " (file size limit)"
        elif code in (-signal.SIGXCPU, -signal.SIGKILL):
            reason += " (cpu time limit)" if code == -signal.SIGXCPU else ""
        return Outcome("failed", f"{reason} before the tests finished", seconds, flags)
    finally:
        shutil.rmtree(host_dir, ignore_errors=True)
