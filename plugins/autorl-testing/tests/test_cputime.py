"""`pytest --cpu-times FILE`: each test's CPU seconds, its own and its children's, summed by
bench/cpu_times.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "cpu_times.py"

TESTS = """
import subprocess, sys, time

def test_busy_child():
    subprocess.run([sys.executable, "-c", "x = 0\\nfor i in range(1_000_000): x += i"], check=True)

def test_sleeps():
    time.sleep(0.5)
"""


def test_each_test_gets_its_cpu_and_the_bench_sums_them(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(TESTS)
    out = tmp_path / "cpu.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--cpu-times", str(out),
         str(tmp_path / "test_probe.py")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["test"].split("::")[-1]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"<collection>", "test_busy_child", "test_sleeps"}
    busy, sleeps = rows["test_busy_child"], rows["test_sleeps"]
    assert busy["children"] > 0.03 and busy["children"] > 5 * sleeps["children"]
    assert sleeps["wall"] >= 0.5 and sleeps["own"] < 0.3  # waiting costs no CPU
    summed = subprocess.run(
        [sys.executable, str(BENCH), str(out)], capture_output=True, text=True, timeout=60
    )
    assert summed.returncode == 0, summed.stderr
    assert "2 tests" in summed.stdout and "test_busy_child" in summed.stdout


def test_accounting_charges_each_process_to_the_test_its_worker_ran() -> None:
    """``--acct``: a sandboxed agent (the harness's grandchild, under another uid) is charged to
    the test whose worker started the harness, by the harness's start; a process no worker is
    an ancestor of (a daemon re-parented to init) is listed apart."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cpu_times_bench", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    t0 = 1_000_000.0
    tests = [
        {"test": "t::first", "start": t0, "pid": 10, "own": 1.0, "children": 0.0, "wall": 10},
        {"test": "t::second", "start": t0 + 10.2, "pid": 10, "own": 1.0, "children": 0.0,
         "wall": 10},
    ]  # fmt: skip

    def proc(name: str, pid: int, ppid: int, start: float, seconds: float, cpu: float) -> dict:
        return {"name": name, "pid": pid, "ppid": ppid, "start": t0 + start,
                "end": t0 + start + seconds, "cpu": cpu, "uid": 0}  # fmt: skip

    procs = [
        proc("autorl", 20, 10, 1, 8, 3.0),  # the first test's harness...
        proc("bwrap", 21, 20, 2, 6, 0.0),
        proc("python", 22, 21, 2, 5, 7.0),  # ...and its sandboxed agent
        proc("autorl", 30, 10, 11, 5, 2.0),  # the second test's harness
        proc("VLLM::Worker", 40, 1, 12, 5, 4.0),  # orphaned: below no worker
    ]
    charged, other = bench.charge(tests, procs)
    assert charged == {"t::first": 10.0, "t::second": 2.0}
    assert other == {"VLLM::Worker": 4.0}
