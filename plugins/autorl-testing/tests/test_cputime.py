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
