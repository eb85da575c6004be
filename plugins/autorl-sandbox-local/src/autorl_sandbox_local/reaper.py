"""A tiny supervisor between the harness and the agent:
``python -m autorl_sandbox_local.reaper -- CMD``.

It makes itself a *child subreaper* (Linux ``prctl``), so processes the agent double-forks or
detaches with ``setsid`` are re-parented to it instead of init and can still be found. On SIGTERM,
or when the agent's main process exits, it terminates every descendant (SIGTERM, a grace period,
then SIGKILL) and only then exits. Standard library + psutil only: it starts fast.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time

import psutil

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GRACE_ENV = "AUTORL_REAPER_GRACE"


def _become_subreaper() -> None:
    """Adopt orphans; and get SIGTERM when the harness dies (then stop everything)."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the process-group kill still applies
        pass
    if os.getppid() != parent:  # the harness died before the death signal was armed
        os.kill(os.getpid(), signal.SIGTERM)


def _descendants() -> list[psutil.Process]:
    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_all(grace: float) -> None:
    """SIGTERM all descendants, wait up to ``grace``, then SIGKILL until none is left."""
    for proc in _descendants():
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _descendants():
        _reap()
        time.sleep(0.05)
    for _ in range(50):  # a fork bomb may keep spawning while we kill
        procs = _descendants()
        if not procs:
            break
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        _reap()
        time.sleep(0.02)
    _reap()


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print(
            "usage: python -m autorl_sandbox_local.reaper -- COMMAND [ARGS...]",
            file=sys.stderr,
        )
        return 2
    grace = float(os.environ.pop(GRACE_ENV, "5"))
    _become_subreaper()
    stopping = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    try:
        child = subprocess.Popen(argv)
    except OSError as exc:
        print(f"autorl sandbox: cannot start {argv[0]!r}: {exc}", file=sys.stderr)
        return 127
    code: int | None = None
    while code is None and not stopping:
        try:
            code = child.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            continue
    kill_all(grace)
    if code is None:
        code = child.poll()
    return 143 if code is None else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
