"""Listening sockets that defend the process they live in: a cap on open connections per
listener (one more is answered 503 at accept), silent connections closed, descriptor shortages
answered through a reserved descriptor instead of a busy loop, and owner-only unix sockets."""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import socket
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from autorl_serving.logs import log

HOST = "127.0.0.1"
MAX_CONNECTIONS = 256
"""Open connections per listener at most (see :func:`connection_limit`)."""
BACKLOG = 128
"""Pending connections a listener asks for (``listen``); kernels may queue more."""
SHED_ON_SHORTAGE = 4096
"""Pending connections one descriptor shortage answers 503 at most (about 0.1 s of work)."""
SHED_PER_TICK = 64
"""Connections refused in one go before the event loop gets to do other work."""
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_BUSY_BODY = b'{"detail": "too many open connections to this service; retry in a moment"}'
BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)


def connection_limit() -> int:
    """Open connections per listener: 256, or an eighth of the soft RLIMIT_NOFILE if that is
    less (at least 8), so that the four listeners of a run (grader and gateway, TCP and unix)
    together leave at least half of the process's descriptors to the harness's own files."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, soft // 8))


def unix_listener(path: Path, mode: int = 0o600) -> socket.socket:
    """A listening unix socket only its owner (the harness's uid) may connect to, by default.

    The sandboxes' forwarder (their PID 1) runs as the harness's uid, or as root when the harness
    is root; the agent runs as another uid and reaches the service only through the forwarder.
    A sandbox whose forwarder has another uid (docker without root) widens ``mode`` itself.
    """
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))  # not listening yet: nobody can connect before the chmod
    os.chmod(path, mode)
    sock.listen(BACKLOG)  # now: a client connecting before the loop runs waits, not refused
    return sock


class ConnectionGate:
    """The open connections of one listener, at most ``limit``; a reserved descriptor to
    answer one client even when the process has none left."""

    def __init__(self, what: str, limit: int, first_byte_s: float | None) -> None:
        self.what = what
        self.limit = limit
        self.first_byte_s = first_byte_s
        self.shed = 0
        """Connections answered 503 because the limit was reached or descriptors ran out."""
        self.exhausted = 0
        """Times ``accept`` failed for want of descriptors (or memory)."""
        self.silent_closed = 0
        """Connections closed because they sent nothing within ``first_byte_s``."""
        self._open: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._reserve: int | None = _reserve_fd()
        self.paused_until = 0.0

    @property
    def active(self) -> int:
        with self._lock:
            return len(self._open)

    def admit(self, conn: _Connection) -> bool:
        with self._lock:
            if len(self._open) >= self.limit:
                return False
            self._open.add(conn)
            return True

    def release(self, conn: _Connection) -> None:
        with self._lock:
            self._open.discard(conn)

    def sweep(self, now: float) -> int:
        """Close the connections that sent nothing within ``first_byte_s``; how many."""
        if self.first_byte_s is None:
            return 0
        with self._lock:
            silent = [c for c in self._open if not c.heard and now - c.opened > self.first_byte_s]
        for conn in silent:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)  # the loop sees EOF and closes it
        self.silent_closed += len(silent)
        return len(silent)

    def out_of_descriptors(self, listener: socket.socket, exc: OSError) -> None:
        """Answer the pending clients with 503 through the reserved
        descriptor, one at a time, then take it back: they learn at once that the service is
        busy instead of waiting behind a listener that cannot accept."""
        self.exhausted += 1
        self.paused_until = time.monotonic() + 0.1  # the rest of asyncio's accept round
        log.warning(
            "the %s is out of file descriptors (%s, %d open connections): pausing accept",
            self.what,
            errno.errorcode.get(exc.errno or 0, "?"),
            self.active,
        )
        if self._reserve is None:
            self._reserve = _reserve_fd()
            return
        os.close(self._reserve)
        self._reserve = None
        try:
            for _ in range(SHED_ON_SHORTAGE):
                try:
                    fd, _ = listener._accept()  # type: ignore[attr-defined]
                except OSError:
                    break
                self.shed += 1
                refuse(socket.socket(listener.family, listener.type, listener.proto, fileno=fd))
        finally:
            self._reserve = _reserve_fd()

    def close(self) -> None:
        if self._reserve is not None:
            with contextlib.suppress(OSError):
                os.close(self._reserve)
            self._reserve = None


def _reserve_fd() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def refuse(conn: socket.socket) -> None:
    """Answer 503 on a fresh connection and close it without blocking."""
    try:
        conn.setblocking(False)
        conn.send(BUSY_RESPONSE)
        conn.shutdown(socket.SHUT_WR)
        for _ in range(4):  # read what the client already sent: close() then sends FIN, not RST
            if not conn.recv(65536):
                break
    except OSError:
        pass
    finally:
        conn.close()


class _Connection(socket.socket):
    """An accepted connection that leaves its gate when closed and notes its first byte."""

    __slots__ = ("gate", "heard", "opened")

    gate: ConnectionGate
    heard: bool
    opened: float

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data = super().recv(bufsize, flags)
        if data:
            self.heard = True
        return data

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        n = super().recv_into(buffer, nbytes, flags)
        if n:
            self.heard = True
        return n

    def close(self) -> None:
        self.gate.release(self)
        super().close()

    def detach(self) -> int:
        self.gate.release(self)
        return super().detach()


class GuardedListener(socket.socket):
    """A listening socket whose ``accept`` (the one asyncio's loop calls) enforces its gate:
    connections over the limit are answered 503 and closed right there."""

    gate: ConnectionGate

    @classmethod
    def wrap(cls, sock: socket.socket, gate: ConnectionGate) -> GuardedListener:
        guarded = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        guarded.gate = gate
        return guarded

    def accept(self) -> tuple[socket.socket, Any]:
        for _ in range(SHED_PER_TICK):
            if time.monotonic() < self.gate.paused_until:  # asyncio retries within its tick
                raise BlockingIOError(errno.EAGAIN, "paused: out of file descriptors")
            try:
                fd, addr = self._accept()  # type: ignore[attr-defined]
            except OSError as exc:
                if exc.errno in RESOURCE_ERRNOS:
                    self.gate.out_of_descriptors(self, exc)
                raise  # asyncio pauses this listener for a second (ACCEPT_RETRY_DELAY)
            conn = _Connection(self.family, self.type, self.proto, fileno=fd)
            conn.gate = self.gate
            conn.heard = False
            conn.opened = time.monotonic()
            if self.gate.admit(conn):
                return conn, addr
            self.gate.shed += 1
            refuse(conn)
        raise BlockingIOError(errno.EAGAIN, "refused a burst of connections; more on the next tick")
