"""Child-side entry of the code sandbox: confine this process, then run the program.

Started by :mod:`autorl_evaluator_code.sandbox` as ``python -I runner.py <config-json>`` in a
throwaway directory. Standard library only. Order matters: the network namespace is left and the
limits are set while still privileged; the user is dropped last, so the untrusted code can raise
none of them back. The verdict goes to an inherited write-only file descriptor and starts with a
nonce read from stdin, so printing ``passed`` or exiting early never counts as a pass (best
effort: code that introspects this frame could find the nonce).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys

CLONE_NEWNET = 0x40000000


def _leave_network() -> bool:
    """A fresh network namespace has only a down loopback: no connection goes anywhere."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(CLONE_NEWNET) == 0
    except (OSError, AttributeError):
        return False


def _limit(name: str, value: int) -> bool:
    try:
        resource.setrlimit(getattr(resource, name), (value, value))
        return True
    except (ValueError, OSError, AttributeError):
        return False


PR_SET_KEEPCAPS = 8
LINUX_CAPABILITY_VERSION_3 = 0x20080522
CAP_DAC_READ_SEARCH = 2


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _keep_only_read_search(libc: ctypes.CDLL) -> bool:
    """Effective and permitted capabilities := {CAP_DAC_READ_SEARCH}: the interpreter and its
    standard library may live under a root-only directory (e.g. /root/.pyenv), so the dropped
    user keeps the right to *read* files, nothing else (no writes, no signals, no rlimit bypass).
    """
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    bit = 1 << CAP_DAC_READ_SEARCH
    data[0].effective = data[0].permitted = bit
    return libc.capset(ctypes.byref(header), data) == 0


def _drop_user(uid: int) -> bool:
    """As root: become an unprivileged uid of our own (RLIMIT_NPROC then applies, files owned by
    others are read-only, the harness's processes cannot be signalled)."""
    if os.geteuid() != 0 or uid <= 0:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
            return False
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if not _keep_only_read_search(libc):
            os._exit(70)  # no uid 0 to go back to and no read access: refuse to run the code
        libc.prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0)
        return True
    except (OSError, AttributeError):
        return False


def _block_sockets() -> None:
    """Make socket creation fail in Python code (a guard on top of the namespace, not a wall)."""
    import _socket
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError("network access is disabled in the code sandbox")

    class BlockedSocket(socket.socket):
        def __init__(self, *args: object, **kwargs: object) -> None:
            refuse()

    socket.socket = BlockedSocket  # type: ignore[misc]
    socket.SocketType = BlockedSocket  # type: ignore[misc]
    socket.create_connection = refuse  # type: ignore[assignment]
    socket.socketpair = refuse  # type: ignore[assignment]
    _socket.socket = BlockedSocket  # type: ignore[misc]


def main() -> None:
    cfg = json.loads(sys.argv[1])
    del sys.argv[1:]
    out = int(cfg["result_fd"])
    nonce = sys.stdin.readline().strip()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    flags = {"net_namespace": _leave_network() if cfg.get("isolate_network", True) else False}
    limits = cfg["limits"]
    flags["rlimit_cpu"] = _limit("RLIMIT_CPU", int(limits["cpu_s"]))
    flags["rlimit_as"] = _limit("RLIMIT_AS", int(limits["memory_mb"]) << 20)
    flags["rlimit_fsize"] = _limit("RLIMIT_FSIZE", int(limits["file_size_mb"]) << 20)
    flags["rlimit_nofile"] = _limit("RLIMIT_NOFILE", int(limits["nofile"]))
    flags["rlimit_core"] = _limit("RLIMIT_CORE", 0)
    flags["rlimit_nproc"] = _limit("RLIMIT_NPROC", int(limits["nproc"]))
    flags["dropped_user"] = _drop_user(int(cfg.get("uid") or 0))
    # RLIMIT_NPROC is not enforced for root: report it as effective only with a dropped user.
    flags["rlimit_nproc"] = flags["rlimit_nproc"] and (flags["dropped_user"] or os.geteuid() != 0)
    _block_sockets()
    os.write(out, (json.dumps(flags) + "\n").encode())

    with open("program.py", encoding="utf-8") as fh:
        source = fh.read()
    try:
        code = compile(source, "program.py", "exec")
        exec(code, {"__name__": "__sandbox__", "__builtins__": __builtins__})
    except BaseException as exc:
        message = f"{type(exc).__name__}: {exc}"[:300].replace("\n", " ")
        os.write(out, f"{nonce} failed {message}\n".encode())
        os._exit(1)
    os.write(out, f"{nonce} passed\n".encode())
    os._exit(0)


if __name__ == "__main__":
    main()
