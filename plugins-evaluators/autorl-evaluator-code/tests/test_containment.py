"""The sandbox contains hostile programs; each test fails if a protection is missing."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from autorl_evaluator_code.execution import run_programs
from autorl_evaluator_code.sandbox import Limits, run_program, sandbox_uid

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="user switch and RLIMIT_NPROC need root")


BOMB_SLOT, DAEMON_SLOT = 998, 999
"""Slots far from where other evaluations on this machine claim uids (from ``UID_BASE``), one
per test, so each leftover check sees only its own program's processes even with the tests on
two xdist workers at once (with one shared slot, the daemon test counted the fork bomb's 15
zombies not yet reaped)."""


def leftovers(slot: int) -> list[psutil.Process]:
    uid = sandbox_uid(slot)
    return [p for p in psutil.process_iter(["uids"]) if p.info["uids"].real == uid]


def test_passing_and_failing_programs() -> None:
    assert run_program("assert sum([1, 2]) == 3").status == "passed"
    failed = run_program("assert sum([1, 2]) == 4, 'wrong sum'")
    assert failed.status == "failed" and "wrong sum" in failed.detail


def test_early_exit_or_printing_passed_is_not_a_pass() -> None:
    assert run_program("import os\nos._exit(0)\nassert False").status == "failed"
    assert run_program("import sys\nsys.exit(0)").status == "failed"
    assert run_program("print('passed')\nraise SystemExit(0)").status == "failed"


def test_infinite_loop_is_killed_and_others_still_pass() -> None:
    programs = ["while True:\n    pass", "assert 1 == 1", "import time\ntime.sleep(3600)", "x = 1"]
    started = time.monotonic()
    outcomes = run_programs(programs, Limits(timeout_s=1.5), workers=2)
    assert [o.status for o in outcomes] == ["timeout", "passed", "timeout", "passed"]
    assert time.monotonic() - started < 10


@needs_root
def test_fork_bomb_is_limited_and_reaped() -> None:
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    started = time.monotonic()
    outcome = run_program(bomb, Limits(timeout_s=2, nproc=16), slot=BOMB_SLOT)
    assert outcome.status == "timeout"
    assert outcome.flags["rlimit_nproc"] and outcome.flags["dropped_user"]
    assert time.monotonic() - started < 15
    assert leftovers(BOMB_SLOT) == []
    assert run_program("assert True").passed  # the host can still start processes


@needs_root
def test_escaped_daemon_is_killed_by_uid() -> None:
    daemon = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(600)\n"
    assert run_program(daemon, slot=DAEMON_SLOT).status == "passed"
    assert leftovers(DAEMON_SLOT) == []


@needs_root
def test_host_files_survive_rmtree_and_writes(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "precious.txt").write_text("keep me")
    os.chmod(tmp_path, 0o755)
    attack = (
        "import os, shutil\n"
        "shutil.rmtree('..', ignore_errors=True)\n"
        f"shutil.rmtree({str(host)!r}, ignore_errors=True)\n"
        f"open({str(host / 'intruder.txt')!r}, 'w').write('x')\n"
    )
    outcome = run_program(attack, root_dir=tmp_path)
    assert outcome.status == "failed" and "PermissionError" in outcome.detail
    assert (host / "precious.txt").read_text() == "keep me"
    assert not (host / "intruder.txt").exists()
    assert list(tmp_path.iterdir()) == [host]  # the sandbox's own directory is deleted


def test_socket_to_localhost_is_blocked() -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(listener.accept())

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    attempts = (
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)",
        # Re-importing socket gets around the Python guard: only the namespace stops it.
        "import importlib, sys\n"
        "sys.modules.pop('_socket', None); sys.modules.pop('socket', None)\n"
        "import socket\n"
        f"s = socket.socket(); s.settimeout(2); s.connect(('127.0.0.1', {port}))",
    )
    try:
        for program in attempts:
            outcome = run_program(program)
            assert outcome.status == "failed", outcome
    finally:
        stop.set()
        thread.join(timeout=2)
        listener.close()
    assert accepted == []


def test_network_namespace_blocks_raw_connects() -> None:
    """Below the Python guard (a fresh interpreter via subprocess) only the namespace helps."""
    if not run_program("pass").flags.get("net_namespace"):
        pytest.skip("no network namespace here (needs CAP_SYS_ADMIN); the guard is best effort")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(3)
    port = listener.getsockname()[1]
    child = (
        "import subprocess, sys\n"
        f"code = 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=2)'\n"
        "subprocess.run([sys.executable, '-c', code], check=True)\n"
    )
    try:
        outcome = run_program(child, Limits(timeout_s=8))
        assert outcome.status == "failed" and "CalledProcessError" in outcome.detail
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_huge_memory_is_refused_and_host_is_fine() -> None:
    outcome = run_program("blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))")
    assert outcome.status == "failed" and "MemoryError" in outcome.detail
    assert outcome.flags["rlimit_as"]
    assert psutil.Process().memory_info().rss < 2 << 30


def test_huge_file_is_stopped_by_fsize() -> None:
    program = "with open('big.bin', 'wb') as fh:\n    fh.write(b'x' * (64 << 20))"
    outcome = run_program(program, Limits(file_size_mb=4))
    assert outcome.status == "failed" and "File too large" in outcome.detail
    assert outcome.flags["rlimit_fsize"]


def test_environment_is_minimal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    program = "import os\nassert 'OPENAI_API_KEY' not in os.environ, 'key leaked'\n"
    program += "import sys\nassert sys.stdin.read() == ''\n"
    assert run_program(program).passed


def test_runs_under_this_interpreter() -> None:
    assert run_program(
        f"import sys\nassert sys.version_info[:2] == {sys.version_info[:2]!r}"
    ).passed
