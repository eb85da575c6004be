"""The engine's lifeline: run a command and end its whole process group when the parent goes.

Started by :class:`autorl_hf.engine.server.EngineServer` as the leader of a new process group,
with the harness holding the write end of its stdin. When that pipe closes (the evaluation
ended, or the harness died: the kernel closes a dead process's descriptors, whatever killed it)
or the command exits, it sends SIGTERM to the group (vLLM's API server and the engine-core
processes it spawned stay in it), waits a grace period, then SIGKILLs the group, itself included.
Nothing of the engine outlives the harness. Standard library only: it runs in the engine's
environment, which has no autorl package.

Usage: ``python lifeline.py GRACE_S [--remove DIR] COMMAND ARG...``: with ``--remove``, the
directory (the engine's private socket and log directory) goes with the group, so a killed
harness leaves nothing of the engine behind, not even its files in ``/tmp``.

Shared memory too: vLLM's message queues (``psm_*``) and multiprocessing's semaphores
(``sem.mp-*``) are files in ``/dev/shm`` that a SIGKILLed process never unlinks, memory of the
host that outlives the engine (20 of them, 160-252 MB apparent, were found after a test suite).
The lifeline notes every ``/dev/shm`` file the group maps before it ends the group, and a
short-lived cleaner outside the group unlinks those that nothing maps once the group is gone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

SHM = "/dev/shm/"


def _pids(group: int | None = None) -> list[int]:
    """Every process, or the live ones of a process group (read from /proc, no library)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        if group is not None:
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) != group or fields[0] == "Z":
                continue  # a zombie maps nothing, and its parent may reap it late
        pids.append(int(entry))
    return pids


def shm_mapped(pids: list[int]) -> set[str]:
    """The /dev/shm files these processes map (a file already unlinked shows as deleted)."""
    paths: set[str] = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as maps:
                for line in maps:
                    parts = line.split(None, 5)
                    if len(parts) == 6 and parts[5].startswith(SHM):
                        path = parts[5].rstrip("\n")
                        if not path.endswith(" (deleted)"):
                            paths.add(path)
        except OSError:
            continue
    return paths


def _clean_shm_after(group: int, paths: set[str]) -> None:
    """Fork a cleaner that leaves the group, waits for it to die and unlinks what nothing maps.

    The lifeline cannot do it itself: it dies with its group's SIGKILL. The cleaner lives a few
    seconds at most; the parent waits until it has left the group before it kills the group.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.write(write_end, b"x")
            deadline = time.monotonic() + 20
            while _pids(group) and time.monotonic() < deadline:
                time.sleep(0.1)
            for path in paths - shm_mapped(_pids()):
                with contextlib.suppress(OSError):
                    os.unlink(path)
        finally:
            os._exit(0)
    os.close(write_end)
    with contextlib.suppress(OSError):
        os.read(read_end, 1)  # the cleaner left the group (or died): the SIGKILL spares it


def _end_group(child: subprocess.Popen[bytes], grace_s: float, remove: str | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group's SIGTERM is for the others
    group = os.getpgrp()
    shm = shm_mapped([pid for pid in _pids(group) if pid != os.getpid()])
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if remove:
        shutil.rmtree(remove, ignore_errors=True)
    if shm:
        _clean_shm_after(group, shm)
    os.killpg(group, signal.SIGKILL)  # the stragglers, and this process: nothing survives


def main(argv: list[str]) -> int:
    remove = argv[3] if len(argv) > 3 and argv[2] == "--remove" else None
    command = argv[4:] if remove else argv[2:]
    if len(argv) < 3 or not command:
        sys.stderr.write("usage: lifeline.py GRACE_S [--remove DIR] COMMAND ARG...\n")
        return 2
    grace_s = float(argv[1])
    if os.getpgrp() != os.getpid():
        os.setpgid(0, 0)  # lead a group of our own, so killpg never reaches the parent
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    closed = threading.Event()

    def watch() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        closed.set()

    threading.Thread(target=watch, daemon=True).start()
    while child.poll() is None and not closed.wait(0.5):
        pass
    code = child.poll()
    _end_group(child, grace_s, remove)
    return 0 if code is None else code  # not reached: the SIGKILL above ends this process


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
