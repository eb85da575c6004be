"""Connection floods and a server in a process of its own, for tests of a server's limits.

A server under a flood test runs in a subprocess (its own ``RLIMIT_NOFILE``, a CPU time to
measure) and speaks a tiny protocol on its standard streams: one JSON line once it serves (where
it listens, its limits), then ``stop`` on stdin stops it and it prints one last JSON line (its
statistics). The grading server's and the serving library's tests share these helpers::

    proc, info = start_server(HERE / "my_flood_server.py", nofile, path)
    held = hold(path, 2000, 20)
    ...
    release(held)
    stats, stderr = stop_server(proc)
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path


def hold(path: str | Path, count: int, seconds: float) -> list[socket.socket]:
    """Open up to ``count`` connections to a unix socket within ``seconds`` and keep them."""
    held: list[socket.socket] = []
    deadline = time.monotonic() + seconds
    while len(held) < count and time.monotonic() < deadline:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(str(path))
        except OSError:  # the backlog is full (or descriptors ran out): the server is behind
            sock.close()
            time.sleep(0.005)
            continue
        held.append(sock)
    return held


def release(held: list[socket.socket]) -> None:
    """Close the connections :func:`hold` kept."""
    for sock in held:
        sock.close()


def start_server(script: Path, *args: object) -> tuple[subprocess.Popen[str], dict]:
    """``python script args...`` and the JSON line it prints once it serves; a server that
    exits before printing it fails the test with its stderr."""
    proc = subprocess.Popen(
        [sys.executable, str(script), *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return proc, json.loads(line)


def stop_server(proc: subprocess.Popen[str], timeout: float = 15.0) -> tuple[dict, str]:
    """``stop`` on the server's stdin: its last JSON line and its stderr. A server that has not
    stopped within ``timeout`` seconds is killed and fails the test."""
    try:
        out, err = proc.communicate("stop\n", timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"the server did not stop within {timeout:g} s") from None
    return json.loads(out.splitlines()[-1]), err
