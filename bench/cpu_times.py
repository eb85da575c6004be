"""Where a test suite's CPU goes: sums the lines of ``pytest --cpu-times FILE``.

    make check PYTEST_ARGS="--cpu-times /tmp/cpu.jsonl"; python bench/cpu_times.py /tmp/cpu.jsonl

Prints the CPU seconds (the test's own process and the processes it waited for) of the whole
run, of collection, per test file and the costliest tests, beside their wall seconds. On a
machine whose cores are busy from the first test to the last, the suite's wall time is about
its CPU seconds over the cores: this is the list to cut from.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.file.read_text().splitlines() if line.strip()]
    tests = [r for r in rows if r["test"] != "<collection>"]
    collection = [r for r in rows if r["test"] == "<collection>"]

    def cpu(r: dict) -> float:
        return r["own"] + r["children"]

    total = sum(map(cpu, tests)) + sum(map(cpu, collection))
    print(f"{len(tests)} tests, {total:.0f} CPU-s in all (own + waited-for children)")
    print(f"collection: {sum(map(cpu, collection)):.0f} CPU-s over {len(collection)} workers")
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for r in tests:
        f = files[r["test"].split("::")[0]]
        f[0] += cpu(r)
        f[1] += r["wall"]
        f[2] += 1
    print(f"\n{'CPU-s':>8} {'wall-s':>8} {'tests':>5}  file")
    for name, (c, w, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"{c:8.1f} {w:8.1f} {n:5d}  {name}")
    print(f"\n{'CPU-s':>8} {'own':>7} {'wall-s':>8}  test")
    for r in sorted(tests, key=cpu, reverse=True)[: args.top]:
        print(f"{cpu(r):8.1f} {r['own']:7.1f} {r['wall']:8.1f}  {r['test'].split('@')[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
