"""The docker sandbox on a real daemon: the core's conformance kit, then the boundary (uid,
capabilities, no_new_privs, limits), cleanup (terminate, orphans, the harness's death)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from autorl_sandbox_docker import image
from autorl_sandbox_docker.sandbox import LABEL_RUN, DockerSandbox, connect, harness_labels
from autorl_testing import SandboxConformance, heavy_modules_imported_by
from autorl_testing.sandbox import HARNESS, LIMITS_PROBE, STUBBORN, sandbox_request

from autorl.errors import ConfigError
from autorl.types import Limits, SandboxRequest

TIMINGS = os.environ.get("AUTORL_DOCKER_TIMINGS")
"""A JSON file to collect the measured timings in (they are also printed: ``pytest -s``)."""


class TestDockerSandboxConformance(SandboxConformance):
    plugin_module = "autorl_sandbox_docker.plugin"


def _record(name: str, seconds: float) -> None:
    print(f"\n[timing] {name}: {seconds:.3f} s")
    if TIMINGS:
        path = Path(TIMINGS)
        data = json.loads(path.read_text()) if path.exists() else {}
        data[name] = round(seconds, 3)
        path.write_text(json.dumps(data, indent=1))


def request(
    tmp_path: Path,
    code: str,
    env: dict[str, str] | None = None,
    limits: Limits | None = None,
    run_id: str = "test",
) -> SandboxRequest:
    return sandbox_request(tmp_path, code, env, limits, run_id)


def _log(tmp_path: Path) -> str:
    path = tmp_path / "run" / "agent.log"
    return path.read_text() if path.exists() else ""


def _wait_for(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _containers(**filters: str) -> list[dict]:
    return connect().api.containers(all=True, filters=filters)


def test_plugin_module_imports_nothing_heavy() -> None:
    assert heavy_modules_imported_by("autorl_sandbox_docker.plugin", heavy=("docker",)) == []


def test_image_is_built_locally_under_a_content_tag() -> None:
    client = connect()
    tag = image.image_tag()
    assert image.image_tag() == tag and tag.startswith("autorl-sandbox:")
    timing_tag = f"{tag}-timing"
    started = time.monotonic()
    assert image.ensure_image(client, timing_tag) == timing_tag
    _record("image build (import of the skeleton tar)", time.monotonic() - started)
    try:
        built = client.images.get(timing_tag)
        assert built.attrs["Size"] < 4096  # an empty skeleton: everything else is mounted
    finally:
        client.images.remove(timing_tag)
    assert image.ensure_image(client) == tag  # cached: found, not rebuilt


def test_check_names_the_install_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    with pytest.raises(ConfigError) as info:
        DockerSandbox().check()
    assert "apt-get install -y docker.io" in str(info.value)
    assert "--bridge=none" in str(info.value)


PROBE = textwrap.dedent(
    """
    import json, os, socket, subprocess
    print("first line", flush=True)
    status = open("/proc/self/status").read()
    field = lambda name: [l.split()[1] for l in status.splitlines() if l.startswith(name)][0]
    seen = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
            "caps": field("CapEff"), "bounding": field("CapBnd"), "nnp": field("NoNewPrivs"),
            "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "root": sorted(os.listdir("/")), "run_dir": sorted(os.listdir(".."))}
    def attempt(fn):
        try:
            fn()
            return "yes"
        except OSError as exc:
            return type(exc).__name__
    seen["harness_signal"] = attempt(lambda: os.kill(int(os.environ["HARNESS_PID"]), 0))
    seen["host_port"] = attempt(
        lambda: socket.create_connection(("127.0.0.1", int(os.environ["HOST_PORT"])), timeout=3))
    seen["write_root"] = attempt(lambda: open("/intruder", "w"))
    seen["write_state"] = attempt(lambda: open("../sandbox/x", "w"))
    seen["read_settings"] = attempt(lambda: open("../sandbox/supervisor.json").read())
    def lifeline():
        s = socket.socket(socket.AF_UNIX)
        s.connect("../sandbox/life.sock")
    seen["lifeline"] = attempt(lifeline)
    seen["setuid_root"] = attempt(lambda: os.setuid(0))
    open("/tmp/t.sh", "w").write("#!/bin/sh\\necho tmp-exec\\n")
    os.chmod("/tmp/t.sh", 0o755)
    seen["tmp_exec"] = subprocess.run(["/tmp/t.sh"], capture_output=True, text=True).stdout.strip()
    seen["home_writable"] = attempt(lambda: open(os.environ["HOME"] + "/x", "w"))
    seen["etc"] = sorted(os.listdir("/etc"))
    seen["passwd"] = open("/etc/passwd").read()
    seen["base_site"] = sorted(os.listdir(os.environ["BASE_SITE"]))
    seen["cwd"] = os.getcwd()
    json.dump(seen, open("seen.json", "w"))
    """
)


def test_boundary_uid_capabilities_no_new_privs(tmp_path: Path) -> None:
    import socket

    from autorl_sandbox_common.runtime import base_site_packages

    listener = socket.create_server(("127.0.0.1", 0))
    env = {
        "HARNESS_PID": str(os.getpid()),
        "HOST_PORT": str(listener.getsockname()[1]),
        "BASE_SITE": str(base_site_packages()[0]),
    }
    sandbox = DockerSandbox()
    try:
        started = time.monotonic()
        proc = sandbox.start(request(tmp_path, PROBE, env))
        while "first line" not in _log(tmp_path):
            assert proc.poll() is None or "first line" in _log(tmp_path), _log(tmp_path)
            assert time.monotonic() - started < 60, "no output within 60 s"
            time.sleep(0.01)
        _record("sandbox start-up (start() to the agent's first line)", time.monotonic() - started)
        assert proc.wait(60) == 0, _log(tmp_path)
    finally:
        listener.close()
    seen = json.loads((tmp_path / "run" / "workspace" / "seen.json").read_text())
    if os.geteuid() == 0:
        assert seen["uid"] != 0 and seen["gid"] != 0 and seen["groups"] in ([], [seen["gid"]])
        assert sandbox.describe()["separate_uid"] is True
    assert seen["uid"] != 0, "the agent must never be the container's root"
    assert seen["caps"] == "0000000000000000" and seen["bounding"] == "0000000000000000"
    assert seen["nnp"] == "1"
    assert seen["setuid_root"] == "PermissionError"
    assert seen["pids"][0] == 1 and len(seen["pids"]) <= 3, seen["pids"]  # supervisor + agent
    assert seen["harness_signal"] == "ProcessLookupError"
    assert seen["host_port"] != "yes"
    assert seen["write_root"] != "yes" and seen["write_state"] != "yes"
    assert seen["read_settings"] == "PermissionError"
    assert seen["lifeline"] != "yes"
    assert seen["tmp_exec"] == "tmp-exec"
    assert seen["home_writable"] == "yes"
    assert set(seen["run_dir"]) <= {"workspace", "home", "sandbox"}, seen["run_dir"]
    assert not {"work", "home", "var", "opt", "srv", "mnt", "boot"} & set(seen["root"]), seen[
        "root"
    ]
    assert "environment" not in seen["etc"] and "shadow" not in seen["etc"], seen["etc"]
    assert f"agent:x:{seen['uid']}:" in seen["passwd"]
    assert seen["base_site"] == []  # the base interpreter's packages are hidden
    assert seen["cwd"] == str(tmp_path / "run" / "workspace")
    assert proc.stats["peak_memory_bytes"] is None or proc.stats["peak_memory_bytes"] > 0
    described = sandbox.describe()
    assert described["name"] == "docker" and described["isolated"] is True
    assert described["image"] == image.image_tag()


LIMITS = LIMITS_PROBE + (
    "time.sleep(1)  # the peak memory is sampled from the container's cgroup (4 times a second)\n"
)


def test_memory_and_pids_limits(tmp_path: Path) -> None:
    limits = Limits(memory_bytes=300 * 1024**2, pids=64, cpus=1.0)
    proc = DockerSandbox().start(request(tmp_path, LIMITS, limits=limits))
    assert proc.wait(120) == 0, _log(tmp_path)
    out = json.loads((tmp_path / "run" / "workspace" / "limits.json").read_text())
    assert out["memory_child"] == -9  # OOM-killed inside the container; the harness is untouched
    assert out["forked"] < 64
    assert proc.stats["oom_kills"] >= 1, proc.stats
    assert proc.stats["peak_memory_bytes"] is None or (
        100 * 1024**2 < proc.stats["peak_memory_bytes"] <= 300 * 1024**2
    ), proc.stats


def test_terminate_leaves_no_process_and_no_container(tmp_path: Path) -> None:
    proc = DockerSandbox(grace_seconds=0.5).start(request(tmp_path, STUBBORN, run_id="stubborn"))
    _wait_for(tmp_path / "run" / "workspace" / "ready")
    time.sleep(0.3)
    marked = proc.alive_processes()
    assert len(marked) >= 5, marked  # supervisor, the agent and 3 children (one detached)
    assert proc.pid in marked
    assert _containers(id=proc.id), "the container is not there while the agent runs"
    started = time.monotonic()
    assert proc.terminate(grace=0.5) is not None
    _record("terminate (stubborn agent, grace 0.5 s)", time.monotonic() - started)
    assert proc.poll() is not None
    survivors = [
        p for p in marked if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
    ]
    assert survivors == []
    assert proc.alive_processes() == []
    assert _containers(id=proc.id) == [], "the container outlived terminate()"


def test_exit_code_log_and_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("autorl_sandbox_common.logpipe.DEFAULT_MAX_BYTES", 100_000)
    code = (
        "import sys\nprint('hello')\nsys.stderr.write('on stderr\\n')\n"
        "for _ in range(100):\n    sys.stdout.write('x' * 10_000 + '\\n')\n"
        "raise SystemExit(3)\n"
    )
    proc = DockerSandbox().start(request(tmp_path, code))
    assert proc.wait(60) == 3
    log = _log(tmp_path)
    assert log.startswith("hello") and "on stderr" in log
    assert len(log) < 101_000 and "bytes dropped" in log
    assert proc.terminate() == 3
    assert _containers(id=proc.id) == []


def test_orphan_of_a_dead_harness_is_removed_by_the_next_start(tmp_path: Path) -> None:
    client = connect()
    tag = image.ensure_image(client)
    dead = subprocess.Popen(["true"])
    dead.wait()
    python = str(Path(sys.base_prefix) / "bin" / "python3")
    base = str(Path(sys.base_prefix).resolve())
    from docker.types import Mount

    def sleeper(labels: dict[str, str]) -> str:
        return client.api.create_container(
            tag,
            [python, "-I", "-S", "-c", "import time; time.sleep(600)"],
            labels=labels,
            network_disabled=True,
            host_config=client.api.create_host_config(
                network_mode="none",
                read_only=True,
                cap_drop=["ALL"],
                mounts=[
                    Mount("/usr", "/usr", type="bind", read_only=True),
                    Mount(base, base, type="bind", read_only=True),
                ],
            ),
        )["Id"]

    orphan = sleeper({**harness_labels("orphan"), "autorl.harness_pid": str(dead.pid)})
    alive = sleeper(harness_labels("alive"))  # this process: its harness is alive
    try:
        client.api.start(orphan)
        client.api.start(alive)
        proc = DockerSandbox().start(request(tmp_path, "print('ok')"))
        assert proc.wait(60) == 0, _log(tmp_path)
        assert _containers(id=orphan) == [], "the orphan survived the next start()"
        assert _containers(id=alive) != [], "a container of a live harness was removed"
    finally:
        for cid in (orphan, alive):
            with contextlib.suppress(Exception):
                client.api.remove_container(cid, force=True)


def test_container_ends_when_the_harness_is_killed(tmp_path: Path) -> None:
    """kill -9 the harness: the supervisor sees its lifeline close and ends the container,
    which the daemon removes; no process of the agent survives."""
    run_id = f"lifeline-{os.getpid()}-{time.time_ns()}"
    script = HARNESS.format(sandbox="docker", tmp=str(tmp_path), run_id=run_id)
    harness = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert harness.stdout is not None
        container_id = harness.stdout.readline().strip()
        assert container_id, "the harness did not start the sandbox"
        beat = tmp_path / "run" / "workspace" / "heartbeat"
        _wait_for(beat)
        assert _containers(label=f"{LABEL_RUN}={run_id}")
    finally:
        harness.kill()
        harness.wait()
    killed = time.monotonic()
    while _containers(label=f"{LABEL_RUN}={run_id}"):
        assert time.monotonic() - killed < 10, "the container outlived its harness by 10 s"
        time.sleep(0.1)
    _record("container gone after the harness was SIGKILLed", time.monotonic() - killed)
    size = beat.stat().st_size
    time.sleep(0.5)
    assert beat.stat().st_size == size, "the agent's daemon kept running after the harness died"


def test_gpus_are_numbered_from_zero_inside(tmp_path: Path) -> None:
    """With GPUs assigned, the container sees only those (device requests), numbered from 0."""
    limits = Limits(gpus=("2", "5"))
    env = DockerSandbox()._agent_env(request(tmp_path, "", limits=limits), (1000, 1000))
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert (
        DockerSandbox()._agent_env(request(tmp_path, ""), (1000, 1000))["CUDA_VISIBLE_DEVICES"]
        == ""
    )
