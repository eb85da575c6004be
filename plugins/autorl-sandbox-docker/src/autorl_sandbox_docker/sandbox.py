"""The ``docker`` sandbox: the ``isolated`` sandbox's boundary, built from a container.

The agent gets what ``isolated`` gives it (see the core's docs/security.md), from the same
pieces: the supervisor (:mod:`autorl_sandbox_isolated.supervisor`) is the container's PID 1 and the
only process with privileges; it forwards the loopback ports over the unix sockets in the
state directory and starts the agent through ``setpriv`` as an unprivileged uid with no
capabilities and ``no_new_privs``; the agent's stdout and stderr reach ``agent.log`` through
the shared capped :class:`~autorl_sandbox_common.logpipe.LogPipe`. The container adds:

- an image that is an empty skeleton (:mod:`autorl_sandbox_docker.image`); the host's system
  directories, the curated ``/etc``, the agent runtime, the base model and the launch's
  read-only paths are read-only bind mounts at their host paths, the workspace and HOME
  read-write with ``read_only_inside`` read-only on top, the state directory read-only, the
  base interpreter's site-packages hidden under an empty tmpfs; the root file system itself
  is read-only and ``/tmp`` a private tmpfs;
- ``--network none``: loopback only, nothing of the host's network;
- ``--cap-drop ALL`` plus the supervisor's four (SETUID, SETGID, SETPCAP, KILL),
  ``no-new-privileges``, memory (without swap), pids and CPU limits, GPUs only when assigned;
- labels naming the run and the harness process. The harness listens on a *lifeline* unix
  socket the supervisor connects to: when the harness dies, the kernel closes it and the
  supervisor ends the container, which the daemon then removes (``auto_remove``). The next
  ``start()`` removes any container whose harness process is gone.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import shutil
import socket
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from autorl_sandbox_common.logpipe import LogPipe
from autorl_sandbox_isolated import supervisor as supervisor_module
from autorl_sandbox_isolated.cgroups import ROOT as CGROUP_ROOT
from autorl_sandbox_isolated.cgroups import AgentCgroup
from autorl_sandbox_isolated.sandbox import (
    BASE_PATH,
    ETC_ENTRIES,
    SYSTEM_DIRS,
    IsolatedSandbox,
    write_private,
)

from autorl.errors import ConfigError
from autorl.types import Limits, SandboxRequest
from autorl_sandbox_docker.image import ensure_image, image_tag

INSTALL_HINT = (
    "install and start Docker Engine, e.g. as root on Debian/Ubuntu: "
    "`apt-get install -y docker.io` then `dockerd --bridge=none --iptables=false &` "
    "(or `systemctl start docker`); `pip install docker` for the SDK; set DOCKER_HOST when "
    "the daemon listens elsewhere. Or use the default `--sandbox isolated` (bubblewrap)"
)
CAPS = ("SETUID", "SETGID", "SETPCAP", "KILL")
"""The supervisor's only capabilities: drop to the agent's uid, and stop its processes."""
LABEL_RUN = "autorl.run"
LABEL_PID = "autorl.harness_pid"
LABEL_START = "autorl.harness_start"
LABEL_BOOT = "autorl.harness_boot"
LABEL_PIDNS = "autorl.harness_pidns"
LIFELINE = "life.sock"
SHELL = "/bin/sh"
SAMPLE_SECONDS = 0.25
"""How often the peak memory is sampled from the container's cgroup (which goes with it)."""
MAX_LIFELINES = 4


# the daemon ---------------------------------------------------------------------------------


def connect(timeout: float | None = 60, version: str | None = None) -> Any:
    """A Docker client whose daemon answered a ping; ConfigError (with the fix) otherwise."""
    try:
        import docker
    except ImportError:
        raise ConfigError(
            "sandbox 'docker' needs the Docker SDK for Python (the `docker` package)",
            hint="pip install autorl-sandbox-docker (or pip install docker)",
        ) from None
    try:
        kwargs: dict[str, Any] = {"timeout": timeout}
        if version:
            kwargs["version"] = version
        client = docker.from_env(**kwargs)
        client.ping()
    except Exception as exc:
        raise ConfigError(
            f"sandbox 'docker': the Docker daemon does not answer "
            f"({os.environ.get('DOCKER_HOST') or 'unix:///var/run/docker.sock'}): {exc}",
            hint=INSTALL_HINT,
        ) from None
    return client


# who the harness is (labels on its containers) -------------------------------------------------


def _start_ticks(pid: int) -> str:
    """The process's start time in clock ticks since boot (tells a reused pid apart)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def _boot_id() -> str:
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return ""


def _pid_namespace() -> str:
    with contextlib.suppress(OSError):
        return os.readlink("/proc/self/ns/pid")
    return ""


def harness_labels(run_id: str) -> dict[str, str]:
    pid = os.getpid()
    return {
        LABEL_RUN: run_id or "agent",
        LABEL_PID: str(pid),
        LABEL_START: _start_ticks(pid),
        LABEL_BOOT: _boot_id(),
        LABEL_PIDNS: _pid_namespace(),
        "autorl.sandbox": "docker",
    }


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _harness_alive(labels: dict[str, str]) -> bool:
    try:
        pid = int(labels.get(LABEL_PID) or 0)
    except ValueError:
        return False
    if pid <= 0 or not pid_alive(pid):
        return False
    started = labels.get(LABEL_START)
    return not started or _start_ticks(pid) == started


def remove_orphans(client: Any) -> list[str]:
    """Remove the sandbox containers whose harness process is gone (it was SIGKILLed before it
    could clean up). Only containers started from this kernel boot and PID namespace are
    judged: a pid means nothing elsewhere."""
    import docker.errors

    removed = []
    boot, pidns = _boot_id(), _pid_namespace()
    for info in client.api.containers(all=True, filters={"label": LABEL_RUN}):
        labels = info.get("Labels") or {}
        if labels.get(LABEL_BOOT) != boot or labels.get(LABEL_PIDNS) != pidns:
            continue
        if _harness_alive(labels):
            continue
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
            client.api.remove_container(info["Id"], force=True)
            removed.append(info["Id"])
    return removed


# the running container --------------------------------------------------------------------------


def _cgroup_dirs(pid: int) -> list[Path]:
    """The container's cgroup directories (memory first), from its PID 1's /proc entry."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return []
    paths: dict[str, str] = {}
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                paths[name] = parts[2].lstrip("/")
    found = []
    for controller in ("memory", "pids"):
        if controller in paths and (CGROUP_ROOT / controller / paths[controller]).is_dir():
            found.append(CGROUP_ROOT / controller / paths[controller])
    if not found and "" in paths and (CGROUP_ROOT / "cgroup.controllers").is_file():
        unified = CGROUP_ROOT / paths[""]
        if unified.is_dir() and unified != CGROUP_ROOT:
            found.append(unified)
    return found


class DockerProcess:
    """The running container: its PID 1 (the supervisor), its output and its end.

    Three harness threads watch it: the daemon's event stream (OOM kills, the exit code, the
    removal: ``auto_remove``), the attached stdout/stderr (into the capped LogPipe), and the
    lifeline listener, which also samples the container's cgroup for the peak memory.
    """

    def __init__(
        self,
        client: Any,
        container_id: str,
        log: LogPipe,
        lifeline: socket.socket,
        grace: float,
    ) -> None:
        self._client = client
        self.id = container_id
        self._log = log
        self._lifeline = lifeline
        self._held: list[socket.socket] = []
        self.grace = grace
        self.pid = 0
        self.stats: dict[str, Any] = {}
        self._exit_code: int | None = None
        self._ooms = 0
        self._reader = AgentCgroup("docker", Limits())
        self._peak: int | None = None
        self._cgroup_ooms = 0
        self._done = threading.Event()
        self._ended = threading.Event()
        self._finish_lock = threading.Lock()
        self._writer_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._streams: Any = None

    # started by the sandbox -------------------------------------------------------------------

    def _watch(self, events: Any, output: Any) -> None:
        """Start the watcher threads: ``events`` and ``output`` were opened before start."""
        for target, args, name in (
            (self._follow_events, (events,), "events"),
            (self._copy_output, (output,), "output"),
            (self._hold_lifeline, (), "lifeline"),
        ):
            thread = threading.Thread(
                target=target, args=args, name=f"autorl-docker-{name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _located(self, pid: int) -> None:
        self.pid = pid
        self._reader.dirs = _cgroup_dirs(pid) if pid else []

    def _follow_events(self, events: Any) -> None:
        try:
            for event in events:
                action = event.get("status") or event.get("Action") or ""
                if action == "oom":
                    self._ooms += 1
                elif action == "die":
                    attributes = (event.get("Actor") or {}).get("Attributes") or {}
                    with contextlib.suppress(TypeError, ValueError):
                        self._exit_code = int(attributes.get("exitCode"))
                    self._ended.set()
                elif action == "destroy":
                    break
        except Exception:  # the daemon went away: fall back to asking it
            self._poll_until_gone()
        finally:
            with contextlib.suppress(Exception):
                events.close()
        self._ended.set()
        self._finish()

    def _poll_until_gone(self) -> None:
        import docker.errors

        while True:
            try:
                state = self._client.api.inspect_container(self.id)["State"]
            except docker.errors.NotFound:
                return
            except Exception:
                time.sleep(1.0)
                continue
            if state.get("Status") in ("exited", "dead"):
                self._exit_code = state.get("ExitCode")
                if state.get("OOMKilled"):
                    self._ooms = max(self._ooms, 1)
                with contextlib.suppress(Exception):
                    self._client.api.remove_container(self.id, force=True)
                return
            time.sleep(SAMPLE_SECONDS)

    def _copy_output(self, output: Any) -> None:
        try:
            for chunk in output:
                view = memoryview(chunk)
                with self._writer_lock:  # never write to the pipe's fd number once closed
                    fd = self._log.write_fd
                    while view and fd >= 0:
                        written = os.write(fd, view)
                        view = view[written:]
                if fd < 0:
                    break
        except Exception:
            pass
        finally:
            with contextlib.suppress(Exception):
                output.close()
            self._close_writer()

    def _close_writer(self) -> None:
        with self._writer_lock:
            self._log.close_writer()

    def _hold_lifeline(self) -> None:
        """Accept the supervisor's connection and keep it open while the harness lives; sample
        the container's memory meanwhile (its cgroup is gone once it ends)."""
        listener = self._lifeline
        listener.settimeout(SAMPLE_SECONDS)
        while not self._ended.is_set():
            if listener.fileno() >= 0 and len(self._held) < MAX_LIFELINES:
                try:
                    conn, _ = listener.accept()
                    self._held.append(conn)
                except TimeoutError:
                    pass
                except OSError:
                    break
            else:
                self._ended.wait(SAMPLE_SECONDS)
            self._sample()

    def _sample(self) -> None:
        if not self._reader.dirs:
            return
        peak = self._reader.peak_memory()
        if peak is not None:
            self._peak = max(peak, self._peak or 0)
        self._cgroup_ooms = max(self._cgroup_ooms, self._reader.oom_kills())

    def _finish(self) -> None:
        """Once the container is gone: its output flushed, the lifeline closed, stats kept."""
        with self._finish_lock:
            if self._done.is_set():
                return
            self._ended.set()
            for thread in self._threads:
                if thread is not threading.current_thread() and thread.name.endswith("output"):
                    thread.join(10)
            self._close_writer()
            self._log.join()
            for conn in self._held:
                with contextlib.suppress(OSError):
                    conn.close()
            with contextlib.suppress(OSError):
                self._lifeline.close()
            self.stats = self.usage()
            if self._streams is not None:
                with contextlib.suppress(Exception):
                    self._streams.close()
            self._done.set()

    # the AgentProcess protocol ----------------------------------------------------------------

    def usage(self) -> dict[str, Any]:
        return {
            "peak_memory_bytes": self._peak,
            "oom_kills": max(self._ooms, self._cgroup_ooms),
        }

    def poll(self) -> int | None:
        return self._code() if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int | None:
        return self._code() if self._done.wait(timeout) else None

    def _code(self) -> int:
        return 137 if self._exit_code is None else self._exit_code

    def terminate(self, grace: float | None = None) -> int | None:
        """``docker stop``: SIGTERM to the supervisor (it stops every process: SIGTERM, grace,
        SIGKILL), SIGKILL to the container after ``grace`` + 3 s; then make sure the
        container is removed."""
        import docker.errors

        grace = self.grace if grace is None else grace
        if not self._done.is_set():
            self._sample()
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                self._client.api.stop(self.id, timeout=math.ceil(grace) + 3)
            if not self._done.wait(10):
                with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                    self._client.api.remove_container(self.id, force=True)
                self._done.wait(10)
        self._finish()
        return self._code()

    def alive_processes(self) -> list[int]:
        """Host PIDs of the container's processes still running (its cgroup)."""
        pids = self._reader.pids()
        if pids or self._done.is_set() or self._reader.dirs:
            return pids
        try:  # cgroups not visible from here (a remote daemon): ask the daemon
            top = self._client.api.top(self.id)
        except Exception:
            return []
        column = (top.get("Titles") or ["PID"]).index("PID") if top else 0
        return [int(row[column]) for row in (top or {}).get("Processes") or []]


# the sandbox -------------------------------------------------------------------------------------


def _covered(path: Path) -> bool:
    """Inside a system directory the container shows at the same path (a read-only bind)."""
    for name in SYSTEM_DIRS:
        system = Path(name)
        if system.is_dir() and not system.is_symlink() and path.is_relative_to(system):
            return True
    return False


def _bind(source: Path | str, target: Path | str | None = None, read_only: bool = True) -> Any:
    from docker.types import Mount

    return Mount(
        str(target or source), str(source), type="bind", read_only=read_only, propagation="rprivate"
    )


class DockerSandbox:
    """A container per agent, from a locally built empty image (Docker Engine)."""

    name = "docker"
    isolated = True

    def __init__(
        self,
        grace_seconds: float = 5.0,
        uid: int | None = None,
        tmp_size: int | None = None,
        shm_size: int | None = None,
    ) -> None:
        self.grace_seconds = grace_seconds
        self.as_root = os.geteuid() == 0
        self.uid = uid
        self.tmp_size = tmp_size
        self.shm_size = shm_size
        self._pieces = IsolatedSandbox(grace_seconds=grace_seconds, uid=uid)

    def check(self) -> None:
        """Fail before any work when this machine cannot run the sandbox (never fall back)."""
        connect()
        if not Path(supervisor_module.SETPRIV).is_file():
            raise ConfigError(
                f"sandbox 'docker' needs {supervisor_module.SETPRIV} (util-linux) to drop the "
                "agent to its own uid",
                hint="apt-get install -y util-linux",
            )

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "isolated": True,
            "separate_uid": self.as_root,
            "mode": "container: own uid, no capabilities, network none"
            if self.as_root
            else "container: the harness's uid, no capabilities, network none",
            "image": image_tag(),
        }

    # start ------------------------------------------------------------------------------------

    def start(self, request: SandboxRequest) -> DockerProcess:
        import docker.errors
        from docker.types import LogConfig

        client = connect()
        remove_orphans(client)
        tag = ensure_image(client)
        state = request.state_dir
        state.mkdir(parents=True, exist_ok=True)
        os.chmod(state, 0o755)
        request.home.mkdir(parents=True, exist_ok=True)
        ids = self._pieces.agent_ids()
        if ids is not None:
            self._pieces.hand_over(request, *ids)
        else:  # not root: the agent keeps the harness's uid, never the container's root
            ids = (os.getuid(), os.getgid())
            # the forwarded services' sockets are 0600 (autorl_serving.unix_listener), but here
            # the forwarder is the container's root without CAP_DAC_OVERRIDE, not their owner:
            # widen them as the lifeline below (the agent has the harness's uid here anyway)
            for forward in request.forwards:
                with contextlib.suppress(OSError):
                    os.chmod(forward.socket, 0o666)
        supervisor = state / "supervisor.py"
        shutil.copyfile(supervisor_module.__file__, supervisor)
        os.chmod(supervisor, 0o644)
        lifeline_path = state / LIFELINE
        lifeline = self._listen(lifeline_path)
        settings = state / "supervisor.json"
        write_private(
            settings,
            json.dumps(
                {
                    "argv": list(request.launch.argv),
                    "env": self._agent_env(request, ids),
                    "uid": ids[0],
                    "gid": ids[1],
                    "forwards": [
                        {"port": f.port, "socket": str(f.socket)} for f in request.forwards
                    ],
                    "grace": self.grace_seconds,
                    "lifeline": str(lifeline_path),
                }
            ),
        )
        passwd, group = self._pieces.identity_files(state, request, ids)
        python = self._python()
        limits = request.limits
        mounts, tmpfs = self._layout(request, passwd, group)
        options: dict[str, Any] = {
            # stderr onto stdout before the supervisor starts: one stream, in the order it was
            # written (the daemon relays two streams without ordering them), as with LogPipe
            "command": [
                SHELL,
                "-c",
                'exec "$0" "$@" 2>&1',
                python,
                "-I",
                "-S",
                str(supervisor),
                str(settings),
            ],
            "name": f"autorl-{re.sub(r'[^A-Za-z0-9_.-]', '-', request.run_id or 'agent')[:80]}"
            f"-{secrets.token_hex(3)}",
            "hostname": "autorl",
            "network_mode": "none",
            "read_only": True,
            "tmpfs": tmpfs,
            "shm_size": self.shm_size or self._memory_share(limits),
            "cap_drop": ["ALL"],
            "cap_add": list(CAPS),
            "security_opt": ["no-new-privileges"],
            "init": False,
            "user": "0:0",
            "working_dir": str(request.workspace),
            "mounts": mounts,
            "environment": {"PATH": BASE_PATH},
            "labels": harness_labels(request.run_id),
            "log_config": LogConfig(type="none"),  # output goes to agent.log only, capped
            "auto_remove": True,
            "stdin_open": False,
            "tty": False,
        }
        if limits.memory_bytes:
            options["mem_limit"] = int(limits.memory_bytes)
            options["memswap_limit"] = int(limits.memory_bytes)  # no escape into swap
        if limits.pids:
            options["pids_limit"] = int(limits.pids)
        if limits.cpus:
            options["nano_cpus"] = int(float(limits.cpus) * 1e9)
        if limits.gpus:
            from docker.types import DeviceRequest

            options["device_requests"] = [
                DeviceRequest(driver="nvidia", device_ids=list(limits.gpus), capabilities=[["gpu"]])
            ]
        try:
            container = client.containers.create(tag, **options)
        except docker.errors.APIError as exc:
            lifeline.close()
            raise _start_error("create", exc) from None
        log = LogPipe(request.log_path)
        os.set_inheritable(log.write_fd, False)
        log.start()
        proc = DockerProcess(client, container.id, log, lifeline, self.grace_seconds)
        try:
            streams = proc._streams = connect(timeout=None, version=client.api.api_version)
            created = _parse_time(container.attrs.get("Created"))
            events = streams.api.events(  # replayed from before the start: nothing is missed
                since=int(created.timestamp()) - 2 if created else None,
                filters={"container": container.id},
                decode=True,
            )
            output = streams.api.attach(container.id, stdout=True, stderr=True, stream=True)
            proc._watch(events, output)
            container.start()
        except Exception as exc:
            with contextlib.suppress(Exception):
                client.api.remove_container(container.id, force=True)
            proc._finish()
            raise _start_error("start", exc) from None
        with contextlib.suppress(Exception):  # gone already when the agent was quick
            proc._located(int(client.api.inspect_container(container.id)["State"]["Pid"]))
        return proc

    # pieces -----------------------------------------------------------------------------------

    @staticmethod
    def _python() -> str:
        python = Path(sys.base_prefix) / "bin" / "python3"
        return str(python if python.exists() else "/usr/bin/python3")

    @staticmethod
    def _listen(path: Path) -> socket.socket:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
        except OSError as exc:
            sock.close()
            raise ConfigError(
                f"sandbox 'docker' cannot listen on {path}: {exc}",
                hint="use a shorter runs directory (unix socket paths are limited to 107 bytes)",
            ) from None
        # root: only the supervisor (uid 0) may connect; otherwise it is the harness's uid
        # that the container's root (without CAP_DAC_OVERRIDE) must reach, so everyone may
        os.chmod(path, 0o600 if os.geteuid() == 0 else 0o666)
        sock.listen(MAX_LIFELINES)
        return sock

    def _agent_env(self, request: SandboxRequest, ids: tuple[int, int]) -> dict[str, str]:
        env = self._pieces.agent_env(request, ids)
        if request.limits.gpus:  # the container sees only its GPUs, numbered from 0
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(request.limits.gpus)))
        return env

    @staticmethod
    def _memory_share(limits: Limits) -> int:
        if limits.memory_bytes:
            return int(limits.memory_bytes)
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2

    def _layout(
        self, request: SandboxRequest, passwd: Path, group: Path
    ) -> tuple[list[Any], dict[str, str]]:
        """Bind mounts (every path at its host path; a later entry for the same target wins,
        docker mounts them by depth) and tmpfs mounts: a private /tmp, and an empty read-only
        one on each harness code or site directory under a read-only mount."""
        found: dict[str, Any] = {}

        def add(source: Path | str, target: Path | str | None = None, ro: bool = True) -> None:
            mount = _bind(source, target, ro)
            found[mount["Target"]] = mount

        for name in SYSTEM_DIRS:
            path = Path(name)
            if path.is_dir() and not path.is_symlink():
                add(path)
        for entry in ETC_ENTRIES:
            path = Path("/etc") / entry
            if path.exists() and not path.is_symlink():
                add(path)
        add(passwd, "/etc/passwd")
        add(group, "/etc/group")
        base = Path(sys.base_prefix).resolve()
        for path in (base, *request.read_only):
            real = Path(path).resolve()
            if not real.exists():
                continue
            if not _covered(real):
                add(real)
            alias = Path(path)
            if (
                alias != real
                and alias.is_absolute()
                and not alias.is_relative_to(request.workspace)
                and not _covered(alias)
                and alias.parent.resolve() == alias.parent
            ):
                add(real, alias)
        add(request.workspace, ro=False)
        add(request.home, ro=False)
        for path in request.read_only_inside:
            if path.exists():
                add(path)
        add(request.state_dir)
        for forward in request.forwards:  # normally in the state directory already
            sock = Path(forward.socket)
            if not sock.is_relative_to(request.state_dir) and sock.exists():
                add(sock)
        size = self.tmp_size or self._memory_share(request.limits)
        tmpfs = {"/tmp": f"rw,exec,nosuid,nodev,size={size},mode=1777"}
        shown = {Path(m["Source"]) for m in found.values() if m["ReadOnly"]}
        for path in _hidden_below({p for p in shown if p.is_dir()}):
            tmpfs[str(path)] = "ro,nosuid,nodev,noexec,size=4k,mode=755"
            found.pop(str(path), None)
        return list(found.values()), tmpfs


def _hidden_below(mounted: set[Path]) -> list[Path]:
    """What the isolated sandbox hides under its mounts (the harness's code and site
    directories, the base interpreter's site-packages)."""
    from autorl_sandbox_isolated.sandbox import hidden_below

    return list(hidden_below(mounted))


def _start_error(step: str, exc: Exception) -> ConfigError:
    text = str(exc)
    hint = None
    if "device driver" in text or "nvidia" in text.lower():
        hint = (
            "GPUs were assigned: install the NVIDIA Container Toolkit (nvidia-container-toolkit), "
            "run `nvidia-ctk runtime configure --runtime=docker` and restart dockerd"
        )
    return ConfigError(f"sandbox 'docker' could not {step} the container: {text}", hint=hint)


def _parse_time(text: Any) -> datetime | None:
    """Docker's RFC 3339 ``Created`` (nanoseconds, ``Z``) as an aware datetime."""
    if not isinstance(text, str):
        return None
    match = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)?$", text)
    if not match:
        return None
    zone = match.group(3) or "Z"
    fraction = (match.group(2) or ".0")[:7]
    return datetime.fromisoformat(match.group(1) + fraction + ("+00:00" if zone == "Z" else zone))
