"""The core's pieces of the boundary: disk watch, a state directory short enough for socket
paths. (Code history, the agent runtime, trajectory copies and the isolated sandbox's own checks
are tested in their plugins: autorl-grading, autorl-sandbox-common, -isolated.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from autorl_runner.diskwatch import DiskWatch, disk_usage
from autorl_runner.statedir import ShortStateDir


def test_disk_usage_counts_allocated_blocks(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.bin"
    with open(sparse, "wb") as fh:
        fh.truncate(10 * 1024**3)
    (tmp_path / "real.bin").write_bytes(os.urandom(2 * 1024**2))
    used, entries = disk_usage((tmp_path,))
    assert 2 * 1024**2 <= used < 50 * 1024**2 and entries == 2


def test_disk_watch_flags_a_workspace_over_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("autorl_runner.diskwatch.INTERVAL_S", 0.05)
    watch = DiskWatch((tmp_path,), cap_gb=1 / 1024).start()  # 1 MiB
    (tmp_path / "big.bin").write_bytes(os.urandom(3 * 1024**2))
    for _ in range(100):
        if watch.exceeded:
            break
        import time

        time.sleep(0.05)
    watch.stop()
    assert watch.exceeded and watch.report()["used_bytes"] > 1024**2


def test_a_run_dir_too_deep_for_socket_paths_gets_a_short_state_dir(tmp_path: Path) -> None:
    """AF_UNIX paths hold 107 bytes: a campaign's deep run directory must not fail the run."""
    import socket

    from autorl_runner.agent_phase import state_dir_for

    shallow = tmp_path / "r"
    assert state_dir_for(shallow) == shallow / "sandbox"
    deep = tmp_path / ("d" * 60) / "campaigns" / "demo" / "runs" / "0123456789ab-1"
    short = state_dir_for(deep)
    assert isinstance(short, ShortStateDir)
    state = short.path
    assert state.is_dir() and state.name.startswith("autorl-state-")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(state / "gateway.sock"))  # fits
    with socket.socket(socket.AF_UNIX) as sock, pytest.raises(OSError, match="too long"):
        sock.bind(str(deep / "sandbox" / "gateway.sock"))  # what it would have been
    short.remove()
    assert not state.exists()


HOLD = """
import sys, time
from autorl_runner.statedir import ShortStateDir
print(ShortStateDir().path, flush=True)
time.sleep(600)
"""


def test_a_killed_harness_short_state_dir_is_removed_by_the_next_run(tmp_path: Path) -> None:
    """SIGKILL runs no clean-up: the directory stays until the next run that needs one sweeps
    it; a live harness's directory (its lock held) is never swept. The harnesses keep their
    directories in a temporary root of this test's own: a run of another test worker sweeps
    the shared one, and once took the dead harness's directory first."""
    from autorl_runner.statedir import sweep

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    procs = [
        subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    try:
        dead, alive = (Path(p.stdout.readline().strip()) for p in procs)
        (dead / "grader.sock").write_text("")  # what a run leaves in it
        procs[0].kill()
        procs[0].wait()
        assert dead.is_dir() and dead.parent == tmp_path  # nothing removed it at its death
        removed = sweep(tmp_path)
        assert dead in removed and not dead.exists()
        assert alive.is_dir() and alive not in removed
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert alive in sweep(tmp_path)  # its harness gone too
