"""Ray where a test may run it: a child Python process in a network namespace of its own.

On a host's network Ray binds the machine's own (non-loopback) address, even when told
127.0.0.1; tests and benchmarks must stay on loopback. The child made here enters a new network
namespace before doing anything else (its only interface ``lo``, brought up, so Ray inside binds
127.0.0.1 and nothing else can reach it), then runs the parent's calls, one at a time, over two
pipes::

    with NetnsHost() as host:
        host.call(start_ray, num_cpus=2)                 # ray.init inside the namespace
        executor = host.executor(RayExecutor())          # map/as_completed run in the child
        for done in executor.as_completed(fn, items, slots):
            ...                                          # each Done as its task ends
        host.call(any_function, *args)                   # anything, e.g. a whole campaign
        host.run(["autorl", "campaign", "run", "c.toml"])  # a command, output captured

Functions, arguments and results travel by cloudpickle. A function from a module that a fresh
interpreter cannot import by its name (a pytest test module under ``--import-mode=importlib``)
travels by value. The child gets the parent's extra ``sys.path`` entries and a ``RAY_TMPDIR`` of
its own, so ``address="auto"`` there finds only the cluster started inside (never another
process's). As root the namespace is a plain ``unshare(CLONE_NEWNET)``; otherwise a user
namespace comes with it. On close, every process left in the namespace is killed: they are all
this host's children.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import importlib.machinery
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
IFREQ = "16sH22x"  # struct ifreq: name, then the flags of its union (40 bytes on Linux 64-bit)


class NetnsError(RuntimeError):
    """The namespaced child could not start, died, or raised something that cannot be pickled."""


class NetnsUnavailable(NetnsError):
    """This machine cannot make a network namespace (not Linux, or no root and no user
    namespaces): Ray cannot be run safely here."""


class NetnsHost:
    """A Python child in its own network namespace that runs the parent's calls."""

    def __init__(self, env: Mapping[str, str] | None = None, start_timeout: float = 120.0):
        self.env = dict(env or {})
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.netns: str | None = None
        self._lock = threading.Lock()

    # lifecycle --------------------------------------------------------------------------------

    def __enter__(self) -> NetnsHost:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="autorl-netns-"))  # short: Ray's socket paths
        self.log_path = self.tmp / "child.log"
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        extra_path = [p for p in sys.path if p and not p.startswith((sys.prefix, sys.base_prefix))]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([*extra_path, os.environ.get("PYTHONPATH", "")]),
            "RAY_TMPDIR": str(self.tmp),
            "RAY_USAGE_STATS_ENABLED": "0",
            **self.env,
        }
        argv = [
            sys.executable,
            "-m",
            "autorl_executor_ray.netns",
            str(to_child_r),
            str(from_child_w),
        ]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                argv,
                pass_fds=(to_child_r, from_child_w),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        os.close(to_child_r)
        os.close(from_child_w)
        self._out = Connection(to_child_w, readable=False)
        self._in = Connection(from_child_r, writable=False)
        kind, info = self._receive(self.start_timeout, what="start")
        if kind != "ready":
            self.close()
            raise NetnsUnavailable(f"cannot make a network namespace: {info}")
        self.netns = info["netns"]
        if info["interfaces"] != ["lo"] or info["netns"] == os.readlink("/proc/self/ns/net"):
            self.close()
            raise NetnsError(f"the child's network is not loopback-only: {info}")

    def close(self) -> None:
        """Stop the child (it shuts Ray down), then kill whatever is left in its namespace."""
        if self.proc is None:
            return
        with contextlib.suppress(OSError):
            self._out.send(("stop", None))
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        deadline = time.monotonic() + 30
        while (left := self.processes()) and time.monotonic() < deadline:
            for pid in left:  # e.g. a `ray start` cluster: never `ray stop`, which kills by name
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        for conn in (self._out, self._in):
            conn.close()
        self.proc = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    def processes(self) -> list[int]:
        """Pids of the processes in this host's network namespace (all started by it)."""
        if self.netns is None:
            return []
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if os.readlink(entry / "ns" / "net") == self.netns:
                        found.append(int(entry.name))
        return found

    def log_tail(self, chars: int = 4000) -> str:
        """The end of the child's output (Ray's own logs included): for failure messages."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    # calls ------------------------------------------------------------------------------------

    def call(
        self, fn: Callable[..., Any], *args: Any, timeout: float = 600.0, **kwargs: Any
    ) -> Any:
        """``fn(*args, **kwargs)`` in the child; its result, or its exception raised here."""
        with self._busy():
            self._out.send(("call", _dumps(fn, args, kwargs)))
            kind, value = self._receive(timeout, what=getattr(fn, "__name__", "call"))
            return self._unpack(kind, value)

    def stream(self, fn: Callable[..., Iterator[Any]], *args: Any, **kwargs: Any) -> Iterator[Any]:
        """Iterates ``fn(*args, **kwargs)`` in the child, yielding each item here as the child
        produces it. Stopping early closes the child's iterator too."""
        with self._busy():
            self._out.send(("stream", _dumps(fn, args, kwargs)))
            finished = False
            try:
                while True:
                    kind, value = self._receive(None, what=getattr(fn, "__name__", "stream"))
                    if kind == "end":
                        finished = True
                        return
                    if kind != "item":
                        finished = True
                    yield self._unpack(kind, value)
            finally:
                if not finished and self.proc is not None and self.proc.poll() is None:
                    self._out.send(("cancel", None))
                    while self._receive(60, what="cancel")[0] not in ("end", "error"):
                        pass

    def run(self, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """A command in the namespace (``autorl campaign run ...``): ``subprocess.run``'s
        arguments, output captured as text unless told otherwise."""
        kwargs = {"capture_output": True, "text": True, **kwargs}
        limit = kwargs.get("timeout")
        return self.call(_run, list(argv), kwargs, timeout=limit + 60 if limit else 24 * 3600)

    def executor(self, executor: Any) -> NetnsExecutor:
        """A stand-in for ``executor`` whose jobs run in the child (so Ray stays inside)."""
        return NetnsExecutor(self, executor)

    # internals --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _busy(self) -> Iterator[None]:
        if self.proc is None:
            raise NetnsError("the namespaced child is not running (use `with NetnsHost() as h`)")
        if not self._lock.acquire(blocking=False):
            raise NetnsError("one call at a time: finish (or close) the running stream first")
        try:
            yield
        finally:
            self._lock.release()

    def _receive(self, timeout: float | None, what: str) -> tuple[str, Any]:
        assert self.proc is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._in.poll(1.0):
            if self.proc.poll() is not None:
                raise NetnsError(
                    f"the namespaced child exited ({self.proc.returncode}) during {what}\n"
                    f"{self.log_tail()}"
                )
            if deadline is not None and time.monotonic() > deadline:
                raise NetnsError(f"{what}: no answer from the namespaced child in {timeout} s")
        return self._in.recv()

    @staticmethod
    def _unpack(kind: str, value: Any) -> Any:
        from ray import cloudpickle

        if kind == "error":
            payload, text = value
            exc = None
            if payload is not None:
                with contextlib.suppress(Exception):
                    exc = cloudpickle.loads(payload)
            if isinstance(exc, BaseException):
                exc.add_note(f"(raised in the network namespace)\n{text}")
                raise exc
            raise NetnsError(f"in the network namespace:\n{text}")
        return cloudpickle.loads(value)


class NetnsExecutor:
    """An executor whose ``map`` and ``as_completed`` run the wrapped one in the namespace."""

    def __init__(self, host: NetnsHost, executor: Any):
        self.host = host
        self.wrapped = executor
        self.name = executor.name

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        return self.host.call(_map, self.wrapped, fn, list(items))

    def as_completed(
        self,
        fn: Callable[..., Any],
        items: Sequence[Any],
        slots: Sequence[Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Iterator[Any]:
        return self.host.stream(_as_completed, self.wrapped, fn, list(items), slots, options)


def _run(argv: list[str], kwargs: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, **kwargs)


def _map(executor: Any, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    return executor.map(fn, items)


def _as_completed(executor: Any, fn: Any, items: list[Any], slots: Any, options: Any) -> Any:
    return executor.as_completed(fn, items, slots, options)


# helpers to call in the child ----------------------------------------------------------------


def start_ray(**init_kwargs: Any) -> str:
    """``ray.init`` a local instance in the child (kept until the host closes); its address."""
    import ray

    from autorl_executor_ray.executor import _own_token

    _own_token()  # never ~/.ray/auth_token
    ray.init(address="local", include_dashboard=False, **init_kwargs)
    return ray.get_runtime_context().gcs_address


def ray_is_initialized() -> bool:
    return "ray" in sys.modules and sys.modules["ray"].is_initialized()


# pickling -------------------------------------------------------------------------------------


def _dumps(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    from ray import cloudpickle

    for obj in (fn, *args, *kwargs.values()):
        for item in obj if isinstance(obj, list | tuple) else (obj,):
            _by_value_unless_importable(cloudpickle, item)
    return cloudpickle.dumps((fn, args, kwargs))


def _by_value_unless_importable(cloudpickle: Any, obj: Any) -> None:
    """Functions and classes of a module the child could not import by name go by value."""
    target = obj if isinstance(obj, type | types.FunctionType) else type(obj)
    module = sys.modules.get(getattr(target, "__module__", "") or "")
    if module is not None and module.__name__ != "__main__" and not _importable(module):
        with contextlib.suppress(ValueError):
            cloudpickle.register_pickle_by_value(module)


def _importable(module: types.ModuleType) -> bool:
    """Whether a fresh interpreter with this ``sys.path`` imports ``module`` by its name from
    the same file (an editable install through an import hook counts as not: by value is safe)."""
    origin = getattr(module, "__file__", None)
    if origin is None:
        return True  # built in
    parts = module.__name__.split(".")
    if not all(part.isidentifier() for part in parts):
        return False
    path: Any = None
    spec = None
    for depth, part in enumerate(parts):
        spec = importlib.machinery.PathFinder.find_spec(part, path)
        if spec is None:
            return False
        path = spec.submodule_search_locations
        if path is None and depth < len(parts) - 1:
            return False
    return bool(spec and spec.origin) and os.path.realpath(spec.origin) == os.path.realpath(origin)


# the child ------------------------------------------------------------------------------------


def enter_network_namespace() -> None:
    """Move this (single-threaded) process into a new network namespace with ``lo`` up."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNET if uid == 0 else CLONE_NEWNET | CLONE_NEWUSER
    if libc.unshare(flags) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"unshare(CLONE_NEWNET) failed: {os.strerror(errno)}")
    if uid != 0:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
        Path("/proc/self/gid_map").write_text(f"0 {gid} 1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        got = fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack(IFREQ, b"lo", 0))
        flags_now = struct.unpack(IFREQ, got)[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags_now | IFF_UP))


def _serve(fd_in: int, fd_out: int) -> None:
    inbox = Connection(fd_in, writable=False)
    outbox = Connection(fd_out, readable=False)
    try:
        enter_network_namespace()
    except OSError as exc:
        outbox.send(("failed", f"{exc} (needs root, or unprivileged user namespaces)"))
        return
    interfaces = [name for _, name in socket.if_nameindex()]
    outbox.send(("ready", {"interfaces": interfaces, "netns": os.readlink("/proc/self/ns/net")}))
    from ray import cloudpickle

    try:
        while True:
            try:
                kind, payload = inbox.recv()
            except EOFError:
                return
            if kind == "stop":
                return
            if kind == "cancel":  # arrived after its stream had ended: nothing to stop
                continue
            try:
                fn, args, kwargs = cloudpickle.loads(payload)
                result = fn(*args, **kwargs)
                if kind == "call":
                    outbox.send(("result", cloudpickle.dumps(result)))
                    continue
                for item in result:
                    outbox.send(("item", cloudpickle.dumps(item)))
                    if inbox.poll() and inbox.recv()[0] == "cancel":
                        getattr(result, "close", lambda: None)()
                        break
                outbox.send(("end", None))
            except BaseException as exc:  # every failure goes back to the caller
                outbox.send(("error", _pack_error(cloudpickle, exc)))
    finally:
        if ray_is_initialized():
            sys.modules["ray"].shutdown()


def _pack_error(cloudpickle: Any, exc: BaseException) -> tuple[bytes | None, str]:
    text = "".join(traceback.format_exception(exc))
    try:
        payload = cloudpickle.dumps(exc)
        cloudpickle.loads(payload)
    except Exception:
        payload = None
    return payload, text


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]))
