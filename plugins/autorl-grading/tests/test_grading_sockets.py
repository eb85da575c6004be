"""The grading server survives the agent's sockets (issue 30): 2,000 connections held open on
its unix socket, in a subprocess with 256 file descriptors, and a real submission is still
graded and logged within seconds; the flood gets quick 503s, never a hang; the server stops
within its timeout; its unix socket admits only its owner. Bounded in count and time."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from autorl_testing.checkpoints import write_checkpoint
from autorl_testing.flood import hold, release, start_server, stop_server

HERE = Path(__file__).parent
AUTH = {"Authorization": "Bearer secret-token"}


@pytest.fixture
def root() -> Iterator[Path]:
    """A short directory: unix socket paths are limited to 107 bytes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:
        if hard != resource.RLIM_INFINITY and hard < 4096:
            pytest.skip("needs 4096 file descriptors for the client side")
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, hard))
    with tempfile.TemporaryDirectory(prefix="autorl-") as name:
        path = Path(name)
        (path / "workspace" / "output").mkdir(parents=True)
        (path / "workspace" / "code").mkdir()
        yield path


def unix_client(path: Path) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(path)), base_url="http://grader")


def serve(root: Path, nofile: int, max_connections: int) -> tuple[subprocess.Popen[str], dict]:
    return start_server(HERE / "grading_flood_server.py", root, nofile, max_connections)


def logged(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "submissions.jsonl").read_text().splitlines()]


def test_a_flood_on_the_unix_socket_leaves_submissions_working(root: Path) -> None:
    write_checkpoint(root / "workspace" / "output" / "v1")
    write_checkpoint(root / "workspace" / "output" / "v2", seed=2)
    proc, info = serve(root, nofile=256, max_connections=0)
    assert info["limit"] == 32
    held: list[socket.socket] = []
    try:
        held = hold(root / "grader.sock", 2000, 20)
        started = time.monotonic()
        with unix_client(root / "grader.sock") as client:
            busy = client.get("/health", timeout=5)
        assert busy.status_code == 503 and time.monotonic() - started < 2
        started = time.monotonic()
        r = httpx.post(
            f"{info['url']}/submit",
            json={"model_path": "output/v1", "wait": True},
            headers=AUTH,
            timeout=30,
        )
        seconds = time.monotonic() - started
        print(
            f"\nheld {len(held)}; a submit over TCP meanwhile: {r.status_code} in {seconds:.2f} s"
        )
        assert r.status_code == 200 and r.json()["status"] == "scored" and seconds < 10
    finally:
        release(held)
    deadline = time.monotonic() + 10
    with unix_client(root / "grader.sock") as client:
        while client.get("/health", timeout=5).status_code != 200:
            assert time.monotonic() < deadline, "the unix socket did not serve again"
            time.sleep(0.05)
        r = client.post(
            "/submit", json={"model_path": "output/v2", "wait": True}, headers=AUTH, timeout=30
        )
        assert r.status_code == 200 and r.json()["status"] == "scored"
    stats, err = stop_server(proc)
    print(f"stats {stats}")
    assert stats["stop_s"] < 7
    assert stats["out_of_descriptors"] == 0 and stats["refused"] > 1000
    assert "Traceback" not in err and len(err) < 20_000, err[-2000:]
    statuses = [(e["submission_id"], e["status"]) for e in logged(root)]
    assert (1, "scored") in statuses and (2, "scored") in statuses


def test_emfile_in_the_grading_server_is_survived(root: Path) -> None:
    """No cap that protects it: the flood takes every descriptor; clients get 503 or a closed
    connection within seconds, never a hang; once the flood goes, a submission is graded."""
    write_checkpoint(root / "workspace" / "output" / "v1")
    proc, info = serve(root, nofile=128, max_connections=100_000)
    held: list[socket.socket] = []
    try:
        held = hold(root / "grader.sock", 2000, 20)
        started = time.monotonic()
        try:
            status = httpx.get(f"{info['url']}/health", timeout=10).status_code
        except httpx.TransportError:
            status = 0
        assert status in (0, 200, 503) and time.monotonic() - started < 5
    finally:
        release(held)
    deadline = time.monotonic() + 20  # silent connections are closed after 15 s at the latest
    while True:
        try:
            r = httpx.post(
                f"{info['url']}/submit",
                json={"model_path": "output/v1", "wait": True},
                headers=AUTH,
                timeout=30,
            )
            if r.status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the server did not recover"
        time.sleep(0.2)
    assert r.json()["status"] == "scored", r.json()
    stats, err = stop_server(proc)
    print(f"\nstats {stats}\n{err[-1000:]}")
    assert stats["out_of_descriptors"] >= 1 and stats["stop_s"] < 7
    assert "Traceback" not in err and len(err) < 20_000, err[-2000:]


def test_the_grading_socket_is_the_owners_only(root: Path) -> None:
    from autorl_grading.server import GradingServer

    async def app(scope: dict, receive: object, send: object) -> None:  # pragma: no cover
        return None

    server = GradingServer(app, unix_socket=root / "grader.sock")
    try:
        info = (root / "grader.sock").stat()
        assert info.st_mode & 0o777 == 0o600 and info.st_uid == os.getuid()
    finally:
        server.stop()


def test_a_checkpoint_taken_in_while_the_grader_has_no_descriptor_left_is_scored(
    tmp_path: Path,
) -> None:
    """Out of descriptors is the harness's state, not the checkpoint's fault: the intake waits
    and tries again, and the submission is scored, not failed as 'could not copy'."""
    write_checkpoint(tmp_path / "workspace" / "output" / "v1")
    done = subprocess.run(
        [sys.executable, str(HERE / "grading_emfile_intake.py"), str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["held"] > 100  # every descriptor was taken when the intake began
    assert result["view"]["status"] == "scored", result["view"]
    assert result["s"] >= 1.0  # it waited for the descriptors to come back
