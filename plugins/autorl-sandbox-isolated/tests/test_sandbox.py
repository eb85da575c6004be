"""The sandboxes: clean environment, nothing survives termination; the isolated sandbox's
boundary (uid, PID and network namespaces, limits, harness death) on this machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import psutil
import pytest
from autorl_sandbox_isolated.sandbox import IsolatedSandbox, bwrap_path
from autorl_sandbox_local.sandbox import LocalSandbox
from autorl_testing.sandbox import (
    HARNESS,
    LIMITS_PROBE,
    STUBBORN,
    cgroups_gone,
    sandbox_cgroups,
    sandbox_request,
)

from autorl.types import Limits, SandboxRequest

needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap not installed")
SANDBOXES = [
    pytest.param(lambda: LocalSandbox(grace_seconds=0.5), id="local"),
    pytest.param(lambda: IsolatedSandbox(grace_seconds=0.5), id="isolated", marks=needs_bwrap),
]


def request(
    tmp_path: Path, code: str, env: dict[str, str] | None = None, limits: Limits | None = None
) -> SandboxRequest:
    return sandbox_request(tmp_path, code, env, limits)


def _wait_for(path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.fixture
def cgroups() -> None:
    """Skip where the harness gets no cgroup to limit the agent in (GPU hosts often give root
    none; the lent H200 did not delegate pids or memory); fail there under
    ``AUTORL_REQUIRE_SANDBOXES``, as in CI."""
    from autorl_sandbox_isolated.cgroups import AgentCgroup

    from autorl.errors import ConfigError

    if os.geteuid() != 0:
        pytest.skip("cgroups need root here")
    probe = AgentCgroup(f"autorl-probe-{uuid.uuid4().hex[:12]}", Limits(pids=64))
    try:
        probe.create()
    except ConfigError as exc:
        if os.environ.get("AUTORL_REQUIRE_SANDBOXES"):
            pytest.fail(f"AUTORL_REQUIRE_SANDBOXES is set but {exc}")
        pytest.skip(str(exc))
    probe.remove()


def _dead(proc: psutil.Process) -> bool:
    """Gone, or a zombie left for init to reap."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _log(tmp_path: Path) -> str:
    return (tmp_path / "run" / "agent.log").read_text()


@pytest.mark.parametrize("make", SANDBOXES)
def test_agent_that_ignores_sigterm_and_forks_leaves_nothing(tmp_path: Path, make) -> None:
    proc = make().start(request(tmp_path, STUBBORN))
    _wait_for(tmp_path / "run" / "workspace" / "ready")
    time.sleep(0.3)
    marked = proc.alive_processes()
    assert len(marked) >= 4, marked  # the agent and 3 children (one detached)
    proc.terminate(grace=0.5)
    time.sleep(0.2)
    survivors = [
        p for p in marked if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
    ]
    assert survivors == []
    assert proc.alive_processes() == []


@pytest.mark.parametrize("make", SANDBOXES)
def test_agent_environment_is_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-harness-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    monkeypatch.setenv("AUTORL_INTERNAL", "harness-only")
    script = "import os, json; json.dump(dict(os.environ), open('env.json', 'w'))"
    proc = make().start(request(tmp_path, script, env={"AUTORL_TOKEN": "t"}))
    assert proc.wait(60) == 0, _log(tmp_path)
    env = json.loads((tmp_path / "run" / "workspace" / "env.json").read_text())
    assert "OPENAI_API_KEY" not in env and "ANTHROPIC_API_KEY" not in env
    assert "AUTORL_INTERNAL" not in env
    assert "sk-fake" not in json.dumps(env)
    assert env["HOME"] == str(tmp_path / "run" / "home")
    assert env["AUTORL_TOKEN"] == "t"


@pytest.mark.parametrize("make", SANDBOXES)
def test_exit_code_and_log(tmp_path: Path, make) -> None:
    proc = make().start(request(tmp_path, "print('hello'); raise SystemExit(3)"))
    assert proc.wait(60) == 3
    assert "hello" in _log(tmp_path)


@pytest.mark.parametrize("make", SANDBOXES)
def test_log_is_capped(tmp_path: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("autorl_sandbox_common.logpipe.DEFAULT_MAX_BYTES", 100_000)
    code = "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * 10_000 + '\\n')\n"
    proc = make().start(request(tmp_path, code))
    assert proc.wait(60) == 0
    proc.terminate()
    log = _log(tmp_path)
    assert len(log) < 101_000
    assert "bytes dropped" in log


PROBE = textwrap.dedent(
    """
    import json, os, socket
    seen = {"uid": os.getuid(), "gid": os.getgid(),
            "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "root": sorted(os.listdir("/")), "run_dir": sorted(os.listdir(".."))}
    try:
        os.kill(int(os.environ["HARNESS_PID"]), 0)
        seen["harness_signal"] = "delivered"
    except OSError as exc:
        seen["harness_signal"] = type(exc).__name__
    try:
        socket.create_connection(("127.0.0.1", int(os.environ["HOST_PORT"])), timeout=3)
        seen["host_port"] = "reached"
    except OSError as exc:
        seen["host_port"] = type(exc).__name__
    status = open("/proc/self/status").read()
    seen["caps"] = [l.split()[1] for l in status.splitlines() if l.startswith("CapEff")][0]
    seen["no_new_privs"] = [l.split()[1] for l in status.splitlines()
                            if l.startswith("NoNewPrivs")][0]
    json.dump(seen, open("seen.json", "w"))
    """
)


@needs_bwrap
def test_isolated_boundary(tmp_path: Path) -> None:
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    env = {"HARNESS_PID": str(os.getpid()), "HOST_PORT": str(listener.getsockname()[1])}
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "submissions.jsonl").write_text("record\n")
    try:
        proc = IsolatedSandbox().start(request(tmp_path, PROBE, env))
        assert proc.wait(60) == 0, _log(tmp_path)
    finally:
        listener.close()
    seen = json.loads((tmp_path / "run" / "workspace" / "seen.json").read_text())
    if os.geteuid() == 0:
        assert seen["uid"] != 0 and seen["gid"] != 0
    assert seen["pids"][0] == 1 and len(seen["pids"]) <= 3, seen["pids"]  # supervisor + agent
    assert seen["harness_signal"] == "ProcessLookupError"
    assert seen["host_port"] != "reached"
    assert seen["caps"] == "0000000000000000"
    assert seen["no_new_privs"] == "1"
    assert "submissions.jsonl" not in seen["run_dir"]
    assert set(seen["run_dir"]) <= {"workspace", "home", "sandbox"}


@needs_bwrap
def test_isolated_limits_memory_and_processes(tmp_path: Path, cgroups: None) -> None:
    limits = Limits(memory_bytes=300 * 1024**2, pids=64)
    proc = IsolatedSandbox().start(request(tmp_path, LIMITS_PROBE, limits=limits))
    assert proc.wait(120) == 0, _log(tmp_path)
    out = json.loads((tmp_path / "run" / "workspace" / "limits.json").read_text())
    assert out["memory_child"] == -9  # OOM-killed inside the cgroup; the harness is untouched
    assert out["forked"] < 64
    assert proc.stats["oom_kills"] >= 1


@pytest.mark.parametrize("sandbox", ["local", pytest.param("isolated", marks=needs_bwrap)])
def test_agent_dies_with_the_harness(tmp_path: Path, sandbox: str) -> None:
    """kill -9 the harness: no process of the agent survives (isolated: the PID namespace ends;
    local: the reaper gets its parent-death signal and kills every descendant)."""
    script = HARNESS.format(sandbox=sandbox, tmp=str(tmp_path), run_id="test")
    harness = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert harness.stdout is not None and harness.stdout.readline().strip()
    beat = tmp_path / "run" / "workspace" / "heartbeat"
    _wait_for(beat)
    harness.kill()
    harness.wait()
    time.sleep(1.0)
    size = beat.stat().st_size
    time.sleep(1.0)
    assert beat.stat().st_size == size, "the agent's daemon kept running after the harness died"


KILLED_WHILE_STARTING = """
import os, subprocess, sys, time
from pathlib import Path
from autorl.types import Limits
from autorl_sandbox_isolated.cgroups import AgentCgroup, join_command
from autorl_sandbox_isolated.reaper import start_reaper
cgroup = AgentCgroup(sys.argv[1], Limits(pids=64))
procs = cgroup.create()
start_reaper(cgroup.dirs, Path(sys.argv[2]))
stray = subprocess.Popen(join_command(procs, ["sleep", "600"]), start_new_session=True)
holder = os.fork()  # keeps the run's end of the reaper's pipe open after the run dies
if holder == 0:
    time.sleep(600)
    os._exit(0)
print(stray.pid, holder, flush=True)
time.sleep(600)
"""
"""A run that made its sandbox's cgroup and put a process in it that nothing else ties to the
run (its own session, no parent-death signal: bwrap's child killed mid-setup, as one was in
CI), and forked a child that holds its end of the reaper's pipe."""


def _in_cgroup(pid: int, run_id: str) -> bool:
    return any(
        str(pid) in (d / "cgroup.procs").read_text().split() for d in sandbox_cgroups(run_id)
    )


def test_a_killed_runs_cgroup_is_emptied_and_removed_by_its_reaper(
    tmp_path: Path, cgroups: None
) -> None:
    run_id = f"reaper-{uuid.uuid4().hex[:12]}"
    run = subprocess.Popen(
        [sys.executable, "-c", KILLED_WHILE_STARTING, f"autorl-{run_id}-0", tmp_path / "log"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert run.stdout is not None
    stray_pid, holder_pid = map(int, run.stdout.readline().split())
    stray, holder = psutil.Process(stray_pid), psutil.Process(holder_pid)
    try:
        deadline = time.monotonic() + 10
        while not _in_cgroup(stray_pid, run_id):
            assert time.monotonic() < deadline, "the stray process never joined the cgroup"
            time.sleep(0.02)
        run.kill()  # no cleanup of its own; its forked child keeps the pipe open
        run.wait()
        assert cgroups_gone(run_id) == [], "the cgroup outlived its run"
        assert _dead(stray), "a process of the killed run's sandbox is still running"
        assert not (tmp_path / "log").exists()  # the reaper had nothing to complain about
    finally:
        holder.kill()


def test_releasing_the_reaper_is_prompt_while_a_child_holds_its_pipe(
    tmp_path: Path, cgroups: None
) -> None:
    """The run's cleanup tells its reaper to go with a byte, not by closing the pipe, so a
    child the run forked (an engine's worker) does not keep the run waiting."""
    run_id = f"release-{uuid.uuid4().hex[:12]}"
    script = textwrap.dedent(
        f"""
        import os, time
        from pathlib import Path
        from autorl.types import Limits
        from autorl_sandbox_isolated.cgroups import AgentCgroup
        from autorl_sandbox_isolated.reaper import start_reaper
        cgroup = AgentCgroup("autorl-{run_id}-0", Limits(pids=64))
        cgroup.create()
        reaper = start_reaper(cgroup.dirs, Path({str(tmp_path / "log")!r}))
        holder = os.fork()
        if holder == 0:
            time.sleep(60)
            os._exit(0)
        started = time.monotonic()
        cgroup.remove()  # what the run's own cleanup does first
        reaper.release()
        print(time.monotonic() - started, flush=True)
        os.kill(holder, 9)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 3  # not the 10 s release() would wait for a stuck reaper
    assert cgroups_gone(run_id, timeout=0) == []


@needs_bwrap
def test_an_agent_with_limits_is_cleaned_up_promptly(tmp_path: Path, cgroups: None) -> None:
    """The normal end: the run empties and removes the cgroup, then releases its reaper, which
    finds nothing left to do (it once waited for the cgroup it could not find, 10 s a run)."""
    limits = Limits(memory_bytes=2 * 1024**3, pids=64)
    run_id = f"ends-{uuid.uuid4().hex[:12]}"
    proc = IsolatedSandbox().start(sandbox_request(tmp_path, "print('hi')", limits=limits,
                                                   run_id=run_id))  # fmt: skip
    assert sandbox_cgroups(run_id)
    started = time.monotonic()
    assert proc.wait(60) == 0
    assert time.monotonic() - started < 5
    assert sandbox_cgroups(run_id) == []
    assert not (tmp_path / "run" / "reaper.log").exists()


@needs_bwrap
def test_killing_the_harness_leaves_no_cgroup(tmp_path: Path, cgroups: None) -> None:
    """kill -9 a harness whose agent has resource limits: the agent stops and the sandbox's
    cgroup is removed (before the reaper, killed runs left them behind, empty)."""
    run_id = f"killed-{uuid.uuid4().hex[:12]}"
    script = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from autorl.types import Limits
        from autorl_sandbox_isolated.sandbox import IsolatedSandbox
        from autorl_testing.sandbox import DAEMON, sandbox_request
        request = sandbox_request(Path({str(tmp_path)!r}), DAEMON, limits=Limits(pids=64),
                                  run_id={run_id!r})
        print(IsolatedSandbox().start(request).pid, flush=True)
        time.sleep(600)
        """
    )
    harness = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert harness.stdout is not None and harness.stdout.readline().strip()
    _wait_for(tmp_path / "run" / "workspace" / "heartbeat")
    assert sandbox_cgroups(run_id), "the sandbox made no cgroup: nothing tested"
    harness.kill()
    harness.wait()
    assert cgroups_gone(run_id) == [], "the sandbox's cgroup outlived the harness"
    assert not (tmp_path / "run" / "reaper.log").exists()


def test_gpu_agents_get_the_driver_libraries_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GPU host that keeps libcuda beside LD_LIBRARY_PATH (``/usr/local/nvidia/lib64``): an
    agent given GPUs gets those directories, and only those the sandbox mounts; other entries
    (a harness directory, one without the driver) never reach it."""
    import tempfile

    from autorl_sandbox_isolated.sandbox import gpu_library_dirs

    if not os.access("/usr/local/lib", os.W_OK):
        pytest.skip("needs a writable /usr/local/lib (root)")
    driver = Path(tempfile.mkdtemp(prefix="autorl-test-nvidia-", dir="/usr/local/lib"))
    try:
        (driver / "libcuda.so.1").write_bytes(b"")
        outside = tmp_path / "lib"
        outside.mkdir()
        (outside / "libcuda.so.1").write_bytes(b"")
        # /usr/share: visible, without the driver (/usr/lib held the real one on the lent H200)
        variable = f"{outside}:/usr/share:{driver}:relative:{driver}"
        assert gpu_library_dirs({"LD_LIBRARY_PATH": variable}) == [str(driver)]
        assert gpu_library_dirs({}) == []
        sandbox = IsolatedSandbox()
        monkeypatch.setenv("LD_LIBRARY_PATH", variable)
        env = sandbox.agent_env(request(tmp_path, "pass", limits=Limits(gpus=("3",))), None)
        plain = sandbox.agent_env(request(tmp_path, "pass"), None)
        assert env["LD_LIBRARY_PATH"] == str(driver) and env["CUDA_VISIBLE_DEVICES"] == "0"
        assert "LD_LIBRARY_PATH" not in plain
    finally:
        import shutil

        shutil.rmtree(driver, ignore_errors=True)


def test_a_cgroup_v2_host_without_delegated_controllers_gets_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lent H200 (cgroup v2) gave the harness's cgroup no pids or memory controller; the
    kernel then answers "No such file or directory", which told the user nothing. This v1
    machine cannot host a v2 hierarchy with controllers, so a directory stands in for
    ``/sys/fs/cgroup`` with what that host showed."""
    from autorl_sandbox_isolated import cgroups as module

    from autorl.errors import ConfigError

    own = tmp_path / "process_api" / "job"
    own.mkdir(parents=True)
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (own / "cgroup.controllers").write_text("cpuset cpu io\n")
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "_own_paths", lambda: {"": "/process_api/job"})
    cgroup = module.AgentCgroup("autorl-v2", Limits(memory_bytes=2**30, pids=64))
    with pytest.raises(ConfigError) as info:
        cgroup.create()
    assert "the memory, pids controller(s) are not delegated to this process's cgroup" in str(
        info.value
    )
    assert "(it has: cpuset, cpu, io)" in str(info.value)
    assert 'pids = "none"' in info.value.hint  # how to run without them
    assert not (own / "harness").exists()  # nothing moved before the refusal


@needs_bwrap
def test_shared_memory_works_and_stays_inside(tmp_path: Path) -> None:
    """POSIX shared memory (vLLM's message queues, PyTorch's DataLoader workers) works in the
    sandbox, on a /dev/shm of its own: bwrap's was root's and read-only, so an agent's vLLM
    server failed at start-up with PermissionError on /psm_*."""
    name = f"autorl-probe-{uuid.uuid4().hex[:12]}"
    code = textwrap.dedent(
        f"""
        import json, os
        from multiprocessing import shared_memory
        segment = shared_memory.SharedMemory(name={name!r}, create=True, size=4096)
        segment.buf[:2] = b"ok"
        listed = os.listdir("/dev/shm")
        open("shm.json", "w").write(json.dumps({{"listed": listed}}))
        segment.close()
        """
    )
    proc = IsolatedSandbox().start(request(tmp_path, code))
    try:
        assert proc.wait(60) == 0, _log(tmp_path)
        seen = json.loads((tmp_path / "run" / "workspace" / "shm.json").read_text())
        assert seen["listed"] == [name]  # its own /dev/shm: nothing of the host's
        assert not Path("/dev/shm", name).exists()  # and nothing of it on the host
    finally:
        Path("/dev/shm", name).unlink(missing_ok=True)
