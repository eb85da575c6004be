"""The ``isolated`` sandbox (the default): bubblewrap namespaces, another uid, cgroup limits.

What the agent gets (see docs/security.md):

- its own mount namespace on an empty root holding only: the workspace and its HOME
  (read-write; ``data/`` and ``kit/`` read-only), the agent runtime and its interpreter, the
  base model and whatever its launch declares (read-only), the system directories a program
  needs (``/usr``, a curated ``/etc`` with a passwd of its own), a private ``/tmp``, ``/dev``
  and ``/proc``. Every path is mounted at its host path, so paths and symlinks mean the same
  to the agent and to the harness. Nothing else of the host exists: no run records, no caches,
  no harness code, no other runs;
- its own PID namespace (the harness is not there to see or signal) whose PID 1 is
  :mod:`autorl_sandbox_isolated.supervisor`; the namespace ends when the supervisor does, when the
  harness stops it, or when the harness dies (``--die-with-parent``);
- its own network namespace: loopback only, with the grading API, the gateway and the egress
  proxy forwarded over unix sockets to the ports the agent was told;
- when the harness is root: an unprivileged uid/gid of its own, no capabilities,
  ``no_new_privs``; without root, bubblewrap's user namespace (the same uid, no capabilities),
  which the run records;
- a cgroup with memory, pids and CPU limits, and only the GPUs assigned to it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from autorl_sandbox_common.logpipe import LogPipe

from autorl.errors import ConfigError
from autorl.types import SandboxRequest
from autorl_sandbox_isolated import supervisor as supervisor_module
from autorl_sandbox_isolated.cgroups import AgentCgroup, join_command
from autorl_sandbox_isolated.reaper import Reaper, start_reaper

INSTALL_HINT = (
    "install bubblewrap: `apt-get install -y bubblewrap` (Debian/Ubuntu), "
    "`dnf install bubblewrap` (Fedora), or `make setup-sandbox` in the autorl repository; "
    "for development only, `--sandbox local` runs without isolation (scores not comparable)"
)
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib32", "/lib64", "/sbin")
ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "localtime",
    "timezone",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "mime.types",
    "profile",
    "profile.d",
    "bash.bashrc",
    "inputrc",
    "shells",
    "terminfo",
    "magic",
    "debian_version",
    "os-release",
    "fonts",
    "mtab",
)
"""What programs read from /etc. Not the rest: /etc/environment and friends may hold keys."""
AGENT_UID_RANGE = (100_000, 165_000)
AGENT_USER = "agent"
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
GPU_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
ROOT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_KILL")
"""The supervisor's only capabilities: drop to the agent's uid, and stop its processes."""


def gpu_library_dirs(environ: dict[str, str] | None = None) -> list[str]:
    """Directories of the harness's ``LD_LIBRARY_PATH`` that hold the NVIDIA driver's user-space
    library (``libcuda.so.1``) and lie in the system directories the agent sees read-only.

    Why: GPU hosts and images often keep the driver's libraries outside the loader's cache
    (``/usr/local/nvidia/lib64`` and the variable), and the agent's environment starts empty; an
    agent given GPUs would otherwise find no CUDA driver. Nothing else of the variable passes.
    """
    value = (os.environ if environ is None else environ).get("LD_LIBRARY_PATH", "")
    found: list[str] = []
    for entry in value.split(":"):
        path = Path(entry)
        if not entry or not path.is_absolute() or entry in found:
            continue
        real = path.resolve()
        visible = any(real.is_relative_to(d) for d in SYSTEM_DIRS)
        if visible and any(real.glob("libcuda.so*")):
            found.append(str(real))
    return found


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@lru_cache(maxsize=4)
def _probe(bwrap: str, as_root: bool) -> str | None:
    """Run ``true`` in the namespaces this sandbox uses; the error text if that fails."""
    argv = [bwrap, *_namespace_flags(as_root), "--ro-bind", "/usr", "/usr"]
    for name in ("/bin", "/lib", "/lib64"):
        argv += _system_dir(name)
    argv += ["--proc", "/proc", "--dev", "/dev", "--", "/bin/true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env={})
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


def _namespace_flags(as_root: bool) -> list[str]:
    if as_root:  # no user namespace: the supervisor must be able to become the agent's uid
        return ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                "--unshare-cgroup-try"]  # fmt: skip
    return ["--unshare-all"]


def _system_dir(name: str) -> list[str]:
    path = Path(name)
    if path.is_symlink():
        return ["--symlink", os.readlink(path), name]
    if path.is_dir():
        return ["--ro-bind", name, name]
    return []


def write_private(path: Path, text: str, mode: int = 0o600) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, mode)


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Hand the agent's writable trees to its uid (symlinks themselves, never followed)."""
    if not root.exists():
        return
    os.chown(root, uid, gid, follow_symlinks=False)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            with contextlib.suppress(FileNotFoundError):
                os.chown(Path(dirpath) / name, uid, gid, follow_symlinks=False)


class IsolatedProcess:
    """The running sandbox: the outer bwrap process, and its PID 1 (the supervisor)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        log: LogPipe,
        cgroup: AgentCgroup,
        info_fd: int,
        grace: float,
        reaper: Reaper | None = None,
    ) -> None:
        self._popen = popen
        self._log = log
        self._cgroup = cgroup
        self._reaper = reaper
        self._info_fd = info_fd
        self.pid = popen.pid
        self.grace = grace
        self.supervisor_pid: int | None = None
        self.stats: dict[str, Any] | None = None
        """The cgroup's measure of the agent, once it stopped (AgentProcess.stats)."""
        self._finished = False

    def _read_info(self) -> None:
        """bwrap writes ``{"child-pid": N}``: the supervisor's PID on the host."""
        if self.supervisor_pid is not None or self._info_fd < 0:
            return
        with contextlib.suppress(OSError, ValueError):
            data = b""
            while not data.rstrip().endswith(b"}"):
                chunk = os.read(self._info_fd, 4096)
                if not chunk:
                    break
                data += chunk
            self.supervisor_pid = int(json.loads(data or b"{}").get("child-pid") or 0) or None
        os.close(self._info_fd)
        self._info_fd = -1

    def poll(self) -> int | None:
        code = self._popen.poll()
        if code is not None:
            self._cleanup()
        return code

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            code = self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self._cleanup()
        return code

    def terminate(self, grace: float | None = None) -> int | None:
        """SIGTERM to the supervisor (it stops every process, grace, SIGKILL); then SIGKILL the
        supervisor itself, which ends the PID namespace; then empty the cgroup."""
        grace = self.grace if grace is None else grace
        self._read_info()
        if self._popen.poll() is None and self.supervisor_pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.supervisor_pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=grace + 3.0)
        if self._popen.poll() is None:
            if self.supervisor_pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(self.supervisor_pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                self._popen.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=5)
        self._cleanup()
        return self._popen.poll()

    def alive_processes(self) -> list[int]:
        """Host PIDs of the sandbox's processes still running (cgroup, else the PID tree)."""
        if self._cgroup.dirs:
            return self._cgroup.pids()
        import psutil

        try:
            tree = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return []
        return [p.pid for p in tree if p.is_running() and p.status() != "zombie"]

    def usage(self) -> dict[str, Any]:
        return {
            "peak_memory_bytes": self._cgroup.peak_memory(),
            "oom_kills": self._cgroup.oom_kills(),
        }

    def _cleanup(self) -> None:
        if self._finished:
            return
        self._finished = True
        try:
            self._read_info()
            self._cgroup.kill_all()
            self.stats = self.usage()
            self._cgroup.remove()
        finally:
            if self._reaper is not None:
                self._reaper.release()
            self._log.join()


class IsolatedSandbox:
    """Namespaces with bubblewrap; the default sandbox."""

    name = "isolated"
    isolated = True

    def __init__(self, grace_seconds: float = 5.0, uid: int | None = None) -> None:
        self.grace_seconds = grace_seconds
        self.as_root = os.geteuid() == 0
        self.uid = uid

    def check(self) -> None:
        """Fail before any work when this machine cannot run the sandbox (never fall back)."""
        bwrap = bwrap_path()
        if bwrap is None:
            raise ConfigError(
                "sandbox 'isolated' needs bubblewrap (bwrap), not found", INSTALL_HINT
            )
        if self.as_root and not Path(supervisor_module.SETPRIV).is_file():
            raise ConfigError(
                f"sandbox 'isolated' needs {supervisor_module.SETPRIV} (util-linux) to drop "
                "the agent to its own uid",
                hint="apt-get install -y util-linux",
            )
        error = _probe(bwrap, self.as_root)
        if error:
            raise ConfigError(
                f"sandbox 'isolated': bubblewrap cannot create namespaces here: {error}",
                hint="enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_"
                "clone=1) or run as root; inside a container, use --sandbox docker on the host",
            )

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "isolated": True,
            "separate_uid": self.as_root,
            "mode": "root: own uid, no capabilities" if self.as_root else "user namespace",
        }

    def agent_ids(self) -> tuple[int, int] | None:
        if not self.as_root:
            return None
        uid = self.uid or secrets.choice(range(*AGENT_UID_RANGE))
        return uid, uid

    def start(self, request: SandboxRequest) -> IsolatedProcess:
        """Start the agent; call it from a thread that lives as long as the run (bwrap's
        parent-death signal follows the thread that forked it)."""
        self.check()
        cgroup = AgentCgroup(f"autorl-{request.run_id or 'agent'}-{os.urandom(3).hex()}",
                             request.limits)  # fmt: skip
        info_read, info_write = os.pipe()
        try:
            procs = cgroup.create()
        except BaseException:
            os.close(info_read)
            os.close(info_write)
            raise
        reaper: Reaper | None = None
        try:
            # before bwrap: from its start on the cgroup is emptied even if this run is killed
            try:
                reaper = start_reaper(cgroup.dirs, request.log_path.with_name("reaper.log"))
            except OSError as exc:
                raise ConfigError(f"sandbox 'isolated' could not start its reaper: {exc}") from None
            argv = self._prepare(request, info_write)
            if reaper is not None:
                reaper.ready()
            log = LogPipe(request.log_path).start()
            try:
                popen = subprocess.Popen(
                    join_command(procs, argv),
                    cwd="/",
                    env={"PATH": BASE_PATH},
                    stdin=subprocess.DEVNULL,
                    stdout=log.write_fd,
                    stderr=log.write_fd,
                    pass_fds=(info_write,),
                    start_new_session=True,
                )
            except OSError as exc:
                raise ConfigError(f"sandbox 'isolated' could not start bwrap: {exc}") from None
            finally:
                log.close_writer()
        except BaseException:  # preparing failed as before (its own error), or the above
            cgroup.remove()
            if reaper is not None:
                reaper.release()
            os.close(info_read)
            raise
        finally:
            os.close(info_write)
        return IsolatedProcess(popen, log, cgroup, info_read, self.grace_seconds, reaper)

    def _prepare(self, request: SandboxRequest, info_fd: int) -> list[str]:
        """Hand the workspace over, write the supervisor and its settings; bwrap's argv."""
        state = request.state_dir
        state.mkdir(parents=True, exist_ok=True)
        os.chmod(state, 0o755)
        ids = self.agent_ids()
        request.home.mkdir(parents=True, exist_ok=True)
        if ids is not None:
            self.hand_over(request, *ids)
        supervisor = state / "supervisor.py"
        shutil.copyfile(supervisor_module.__file__, supervisor)
        os.chmod(supervisor, 0o644)
        settings = state / "supervisor.json"
        env = self.agent_env(request, ids)
        write_private(
            settings,
            json.dumps(
                {
                    "argv": list(request.launch.argv),
                    "env": env,
                    "uid": ids[0] if ids else None,
                    "gid": ids[1] if ids else None,
                    "forwards": [
                        {"port": f.port, "socket": str(f.socket)} for f in request.forwards
                    ],
                    "grace": self.grace_seconds,
                }
            ),
        )
        passwd, group = self.identity_files(state, request, ids)
        return self._argv(request, supervisor, settings, passwd, group, info_fd)

    # pieces -----------------------------------------------------------------------------------

    def hand_over(self, request: SandboxRequest, uid: int, gid: int) -> None:
        """The workspace's writable parts and HOME belong to the agent's uid; the read-only
        parts stay the harness's (and are mounted read-only on top)."""
        workspace = request.workspace
        os.chown(workspace, uid, gid)
        keep = {p.resolve() for p in request.read_only_inside}
        for child in workspace.iterdir():
            if child.resolve() in keep or child.is_symlink() or child.is_file():
                continue
            if child.name == "models":
                continue
            chown_tree(child, uid, gid)
        chown_tree(request.home, uid, gid)

    def agent_env(self, request: SandboxRequest, ids: tuple[int, int] | None) -> dict[str, str]:
        env = {
            "PATH": BASE_PATH,
            "HOME": str(request.home),
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "USER": AGENT_USER,
            "LOGNAME": AGENT_USER,
            "PYTHONUNBUFFERED": "1",
        }
        env.update({str(k): str(v) for k, v in request.launch.env.items()})
        env["TMPDIR"] = "/tmp"
        # only the assigned device nodes exist inside, and CUDA numbers what it can open from
        # 0 (as in a container): GPUs [2, 5] are devices 0 and 1 to the agent
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(request.limits.gpus)))
        if request.limits.gpus and (libraries := gpu_library_dirs()):
            env["LD_LIBRARY_PATH"] = ":".join(libraries)
        return env

    def identity_files(
        self, state: Path, request: SandboxRequest, ids: tuple[int, int] | None
    ) -> tuple[Path, Path]:
        uid, gid = ids if ids else (os.getuid(), os.getgid())
        passwd = state / "passwd"
        group = state / "group"
        write_private(
            passwd,
            f"root:x:0:0:root:/:/usr/sbin/nologin\n"
            f"{AGENT_USER}:x:{uid}:{gid}:autorl agent:{request.home}:/bin/bash\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
            0o644,
        )
        write_private(group, f"root:x:0:\n{AGENT_USER}:x:{gid}:\nnogroup:x:65534:\n", 0o644)
        return passwd, group

    def _argv(
        self,
        request: SandboxRequest,
        supervisor: Path,
        settings: Path,
        passwd: Path,
        group: Path,
        info_fd: int,
    ) -> list[str]:
        bwrap = bwrap_path() or "bwrap"
        argv = [bwrap, *_namespace_flags(self.as_root)]
        argv += ["--die-with-parent", "--new-session", "--as-pid-1", "--hostname", "autorl"]
        for name in SYSTEM_DIRS:
            argv += _system_dir(name)
        argv += ["--perms", "0755", "--dir", "/etc"]
        for entry in ETC_ENTRIES:
            path = Path("/etc") / entry
            if path.is_symlink() or path.exists():
                argv += ["--ro-bind-try", str(path), str(path)]
        argv += ["--ro-bind", str(passwd), "/etc/passwd", "--ro-bind", str(group), "/etc/group"]
        argv += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            # POSIX shared memory (shm_open) for the agent's own processes: vLLM's message
            # queues, PyTorch's DataLoader workers. bwrap's /dev/shm is root's and read-only
            "--perms",
            "1777",
            "--tmpfs",
            "/dev/shm",
            "--perms",
            "1777",
            "--tmpfs",
            "/tmp",
            "--ro-bind",
            "/sys",
            "/sys",
        ]
        for gpu in request.limits.gpus:
            argv += ["--dev-bind-try", f"/dev/nvidia{gpu}", f"/dev/nvidia{gpu}"]
        if request.limits.gpus:
            for node in GPU_NODES:
                argv += ["--dev-bind-try", f"/dev/{node}", f"/dev/{node}"]
        hidden = {p.resolve() for p in request.read_only}
        tops = [*hidden, request.workspace, request.home, request.state_dir]
        for parent in _ancestors(tops):
            argv += ["--perms", "0755", "--dir", str(parent)]
        for path in request.read_only:
            real = path.resolve()
            argv += ["--ro-bind", str(real), str(real)]
            if path != real and not path.is_relative_to(request.workspace):
                argv += ["--symlink", str(real), str(path)]
        for path in hidden_below(hidden | {Path(d) for d in SYSTEM_DIRS}):
            argv += ["--tmpfs", str(path)]
        argv += ["--bind", str(request.workspace), str(request.workspace)]
        argv += ["--bind", str(request.home), str(request.home)]
        for path in request.read_only_inside:
            if path.exists():
                argv += ["--ro-bind", str(path), str(path)]
        argv += ["--ro-bind", str(request.state_dir), str(request.state_dir)]
        argv += ["--chdir", str(request.workspace), "--clearenv", "--setenv", "PATH", BASE_PATH]
        if self.as_root:
            argv += ["--cap-drop", "ALL"]
            for cap in ROOT_CAPS:
                argv += ["--cap-add", cap]
        argv += ["--info-fd", str(info_fd)]
        python = Path(sys.base_prefix) / "bin" / "python3"
        argv += ["--", str(python if python.exists() else "/usr/bin/python3")]
        argv += ["-I", "-S", str(supervisor), str(settings)]
        return argv


def _ancestors(paths: list[Path]) -> list[str]:
    """Directories above each mount point, made traversable for the agent's uid (bwrap would
    copy the host's mode: /root is 0700)."""
    found: set[str] = set()
    for path in paths:
        for parent in Path(path).parents:
            if str(parent) != "/" and not any(
                str(parent) == d or str(parent).startswith(d + "/") for d in SYSTEM_DIRS
            ):
                found.add(str(parent))
    return sorted(found, key=lambda p: (p.count("/"), p))


def hidden_below(mounted: set[Path]) -> list[Path]:
    """The harness's code and site directories (and the base interpreter's site-packages) that
    lie under a mounted directory: each gets an empty tmpfs on top."""
    from autorl_sandbox_common.runtime import base_site_packages, harness_code_paths

    mounts = [m.resolve() for m in mounted if m.exists()]
    found = []
    for path in (*base_site_packages(), *harness_code_paths()):
        real = path.resolve()
        if any(real == m or real.is_relative_to(m) for m in mounts):
            found.append(real)
    return sorted(set(found))
