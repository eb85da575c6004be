"""The first process inside a namespace sandbox: ``python -I -S supervisor.py SETTINGS.json``.

Standard library only (it runs with the bare interpreter, before and apart from the agent).
It is PID 1 of the agent's PID namespace and holds the privileges the agent never gets:

1. listens on ``127.0.0.1:PORT`` inside the sandbox's own network namespace for each forward
   and relays every connection to the harness's unix socket for that port (the grading API,
   the LLM gateway, the egress proxy): the agent uses the URLs it was given, nothing else
   of the host's network exists;
2. starts the agent through ``setpriv`` as an unprivileged uid/gid with no capabilities, an
   empty bounding set and ``no_new_privs`` (setuid binaries cannot give any back);
3. reaps every orphan (it is PID 1), and when the agent's main process ends, when it gets
   SIGTERM, or when the harness's lifeline socket closes (the harness died), it stops every
   process of the namespace: SIGTERM, a grace period, SIGKILL. Its own exit ends the
   namespace, and the kernel kills whatever is left.

The agent cannot signal or trace it: another uid, and no capabilities.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import signal
import socket
import sys
import threading
import time

SETPRIV = "/usr/bin/setpriv"
BUFFER = 1 << 16


MAX_RELAYS = 64
"""Connections relayed at once per forward. The agent's own floods stop here: past it a new
connection is closed at once (the harness's listener has its own cap behind this one), and
the forward keeps serving the connections it has."""


def _relay(client: socket.socket, target: str, slots: threading.BoundedSemaphore) -> None:
    """Copy bytes both ways between ``client`` and the harness's unix socket, in one thread
    (a half-closed side is shut for writing; the relay ends when both sides are done)."""
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(target)
        peer = {client: upstream, upstream: client}
        open_ = [client, upstream]
        while open_:
            ready, _, _ = select.select(open_, [], [], 60.0)
            for src in ready:
                data = src.recv(BUFFER)
                if data:
                    peer[src].sendall(data)
                    continue
                open_.remove(src)
                with contextlib.suppress(OSError):
                    peer[src].shutdown(socket.SHUT_WR)
    except (OSError, ValueError):
        pass
    finally:
        client.close()
        upstream.close()
        slots.release()


def _serve(listener: socket.socket, target: str) -> None:
    slots = threading.BoundedSemaphore(MAX_RELAYS)
    while True:
        try:
            client, _ = listener.accept()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                time.sleep(0.1)  # out of descriptors: wait for relays to end, keep serving
                continue
            return
        if not slots.acquire(blocking=False):
            client.close()  # at the cap: refused at once, never queued
            continue
        try:
            threading.Thread(target=_relay, args=(client, target, slots), daemon=True).start()
        except RuntimeError:  # no thread to be had (the agent used up the pids limit)
            client.close()
            slots.release()
            time.sleep(0.1)


def start_forwards(forwards: list[dict]) -> None:
    for forward in forwards:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(forward["port"])))
        listener.listen(64)
        threading.Thread(
            target=_serve, args=(listener, str(forward["socket"])), daemon=True
        ).start()


def _watch_lifeline(path: str, stop: threading.Event) -> None:
    """Block on the harness's socket; EOF means the harness is gone."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        while True:
            ready, _, _ = select.select([sock], [], [], 1.0)
            if ready and not sock.recv(16):
                break
    except OSError:
        pass
    stop.set()


def _kill_all(sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(-1, sig)  # in a PID namespace: every process but this one


def _reap(agent_pid: int) -> int | None:
    """Reap every exited child; return the agent's exit code if it was among them."""
    code = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code
        if pid == 0:
            return code
        if pid == agent_pid:
            code = os.waitstatus_to_exitcode(status)
            code = 128 - code if code < 0 else code


def _others_alive() -> bool:
    me = os.getpid()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me:
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    state = fh.read().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if state != b"Z":
                return True
    return False


def agent_argv(settings: dict) -> list[str]:
    argv = [str(a) for a in settings["argv"]]
    uid = settings.get("uid")
    if uid is None:
        return argv
    gid = settings.get("gid", uid)
    return [
        SETPRIV,
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
        *argv,
    ]


def main(path: str) -> int:
    with open(path, encoding="utf-8") as fh:
        settings = json.load(fh)
    grace = float(settings.get("grace", 5.0))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: stop.set())
    try:
        start_forwards(settings.get("forwards", []))
    except OSError as exc:
        print(f"autorl sandbox: cannot listen for the forwards: {exc}", file=sys.stderr)
        return 125
    if settings.get("lifeline"):
        threading.Thread(
            target=_watch_lifeline, args=(settings["lifeline"], stop), daemon=True
        ).start()
    env = {str(k): str(v) for k, v in settings.get("env", {}).items()}
    argv = agent_argv(settings)
    try:
        pid = os.posix_spawn(argv[0], argv, env) if os.path.isabs(argv[0]) else None
        if pid is None:
            pid = os.posix_spawnp(argv[0], argv, env)
    except OSError as exc:
        print(f"autorl sandbox: cannot start {argv[0]!r}: {exc}", file=sys.stderr)
        return 127
    code = None
    while code is None and not stop.is_set():
        code = _reap(pid)
        if code is None:
            stop.wait(0.05)
    _kill_all(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _others_alive():
        found = _reap(pid)
        code = found if found is not None else code
        time.sleep(0.05)
    for _ in range(100):  # a fork bomb may keep spawning while we kill
        _kill_all(signal.SIGKILL)
        found = _reap(pid)
        code = found if found is not None else code
        if not _others_alive():
            break
        time.sleep(0.02)
    return 143 if code is None else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
