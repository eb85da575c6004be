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


def _end_group(child: subprocess.Popen[bytes], grace_s: float, remove: str | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group's SIGTERM is for the others
    group = os.getpgrp()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if remove:
        shutil.rmtree(remove, ignore_errors=True)
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
