"""A Docker daemon for tests: the ``docker_engine`` session fixture (its ``DOCKER_HOST``).

Use it from a conftest (``from autorl_sandbox_docker.testing import docker_engine``) or load
this module as a pytest plugin (``pytest -p autorl_sandbox_docker.testing``).

The running daemon when one answers (``DOCKER_HOST`` or the default socket). Otherwise, as
root with ``dockerd`` installed, a private daemon for the session: no bridge, no iptables (the
sandbox's containers use ``--network none``, so nothing leaves loopback), its own data root
under ``/var/lib/autorl-docker-test/`` and exec root under ``/run``, reached on its own unix
socket through ``DOCKER_HOST``; stopped by its pid when the session ends (or when pytest dies:
parent-death signal). Without either, the tests that use it are skipped, naming the install
command.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autorl_sandbox_docker.sandbox import pid_alive

DATA_ROOT = Path("/var/lib/autorl-docker-test")
INSTALL = (
    "needs a Docker daemon: as root, `apt-get install -y docker.io` (then these tests start a "
    "private `dockerd --bridge=none --iptables=false` themselves), or start one and set DOCKER_HOST"
)
PR_SET_PDEATHSIG = 1
REQUIRED = "AUTORL_REQUIRE_SANDBOXES"


def _answers(timeout: float = 5.0) -> bool:
    try:
        import docker

        client = docker.from_env(timeout=timeout)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _clear_stale() -> None:
    """Directories of earlier sessions whose pytest (and daemon) are gone."""
    for base in (*DATA_ROOT.glob("s*"), *Path("/run").glob("adt-*")):
        try:
            owner = int(base.name.lstrip("s").removeprefix("adt-"))
        except ValueError:
            continue
        if owner != os.getpid() and not pid_alive(owner):
            shutil.rmtree(base, ignore_errors=True)


def _start_dockerd(dockerd: str) -> tuple[subprocess.Popen[bytes], Path, Path, Path]:
    _clear_stale()
    data = DATA_ROOT / f"s{os.getpid()}"
    run = Path("/run") / f"adt-{os.getpid()}"  # short: containerd's sockets live below it
    for path in (data, run):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True, mode=0o700)
    config = run / "daemon.json"
    config.write_text("{}\n")  # never the host's /etc/docker/daemon.json
    sock = run / "docker.sock"
    log = data / "dockerd.log"
    argv = [
        dockerd,
        "--bridge=none",
        "--iptables=false",
        "--ip-masq=false",
        f"--data-root={data / 'root'}",
        f"--exec-root={run / 'x'}",
        f"--pidfile={run / 'docker.pid'}",
        f"--host=unix://{sock}",
        f"--config-file={config}",
        "--log-level=warn",
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
    return proc, sock, data, run


class EngineUnavailable(Exception):
    """No daemon answers and none can be started here (the message says what to install)."""


@contextlib.contextmanager
def engine() -> Iterator[str]:
    """``DOCKER_HOST`` of a daemon that answers: the running one, else a private one started
    (as root) for the duration of the block and stopped by its pid afterwards."""
    if _answers():
        yield os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        return
    dockerd = shutil.which("dockerd")
    if os.geteuid() != 0 or dockerd is None:
        raise EngineUnavailable(INSTALL)
    proc, sock, data, run = _start_dockerd(dockerd)
    previous = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = f"unix://{sock}"
    try:
        deadline = time.monotonic() + 60
        while not (sock.exists() and _answers(2.0)):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (data / "dockerd.log").read_text(errors="replace")[-3000:]
                raise EngineUnavailable(f"dockerd did not start (exit {proc.poll()}):\n{tail}")
            time.sleep(0.2)
        yield os.environ["DOCKER_HOST"]
    finally:
        _stop(proc)
        if previous is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = previous
        shutil.rmtree(run, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[str]:
    """``DOCKER_HOST`` of a daemon that answers, for the whole session (skipped without one,
    failed instead when ``AUTORL_REQUIRE_SANDBOXES`` is set, as in CI)."""
    try:
        with engine() as host:
            yield host
    except EngineUnavailable as exc:
        if os.environ.get(REQUIRED):  # CI: a skipped sandbox would hide a missing install
            pytest.fail(f"{REQUIRED} is set but the docker sandbox {exc}")
        pytest.skip(str(exc))


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """The daemon we started, by its pid: SIGTERM (it stops its containerd), then SIGKILL."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
