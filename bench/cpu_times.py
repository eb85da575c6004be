"""Where a test suite's CPU goes: sums the lines of ``pytest --cpu-times FILE``.

    make check PYTEST_ARGS="--cpu-times /tmp/cpu.jsonl"; python bench/cpu_times.py /tmp/cpu.jsonl

Prints the CPU seconds (the test's own process and the processes it waited for) of the whole
run, of collection, per test file and the costliest tests, beside their wall seconds. On a
machine whose cores are busy from the first test to the last, the suite's wall time is about
its CPU seconds over the cores: this is the list to cut from.

A test's waited-for children miss what it does not reap itself: a sandboxed agent (reaped
inside its sandbox's PID namespace), a daemon, an engine. With the kernel's process accounting
around the suite, ``--acct`` charges every process to the test that ran in its ancestor worker
when it started (its own CPU, not its children's: each process is counted once)::

    apt-get install acct; touch /tmp/pacct; accton /tmp/pacct
    make test PYTEST_ARGS="--cpu-times /tmp/cpu.jsonl"; accton off
    python bench/cpu_times.py /tmp/cpu.jsonl --acct /tmp/pacct
"""

from __future__ import annotations

import argparse
import bisect
import json
import subprocess
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from autorl.text import sanitize


def acct_processes(path: Path) -> list[dict]:
    """Every process in a process-accounting file (``dump-acct``, from the ``acct`` package):
    name, CPU seconds, start (epoch), end, pid, parent pid (at its exit), uid."""
    out = subprocess.run(["dump-acct", str(path)], capture_output=True, text=True, check=True)
    procs = []
    for line in out.stdout.splitlines():
        # the name is a process's own (an agent's too: any bytes, "|" included): the 14 fields
        # after it are counted from the right, and it is shown only made inert (sanitize)
        name, *f = [x.strip() for x in line.rsplit("|", 14)]
        if len(f) < 14:
            continue
        f = [sanitize(name, 32), *f]
        start = datetime.strptime(f[14], "%a %b %d %H:%M:%S %Y").timestamp()
        procs.append({"name": f[0], "cpu": (float(f[2]) + float(f[3])) / 100, "start": start,
                      "end": start + float(f[4]) / 100, "pid": int(f[9]), "ppid": int(f[10]),
                      "uid": int(f[5])})  # fmt: skip
    return procs


def charge(tests: list[dict], procs: list[dict]) -> tuple[dict[str, float], dict[str, float]]:
    """CPU seconds of the processes below each test's worker, by test; the others by name."""
    by_pid: dict[int, list[dict]] = defaultdict(list)
    for p in procs:
        by_pid[p["pid"]].append(p)
    runs: dict[int, list[dict]] = defaultdict(list)  # worker pid -> its tests, by start
    for t in tests:
        if "pid" in t:
            runs[t["pid"]].append(t)
    for seq in runs.values():
        seq.sort(key=lambda t: t["start"])
    starts = {pid: [t["start"] for t in seq] for pid, seq in runs.items()}

    def parent(p: dict) -> dict | None:
        alive = [q for q in by_pid.get(p["ppid"], []) if q["start"] <= p["start"] <= q["end"] + 1]
        return alive[0] if alive else None

    charged: dict[str, float] = defaultdict(float)
    other: dict[str, float] = defaultdict(float)
    for p in procs:
        if p["pid"] in runs:
            continue  # a worker: its own CPU is the lines' "own"
        q, hops = p, 0
        while q is not None and q["ppid"] not in runs and hops < 50:
            q, hops = parent(q), hops + 1
        if q is None or q["ppid"] not in runs:
            other[p["name"]] += p["cpu"]
            continue
        seq = runs[q["ppid"]]
        i = bisect.bisect_right(starts[q["ppid"]], q["start"] + 1) - 1
        charged[seq[max(i, 0)]["test"]] += p["cpu"]
    return charged, other


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--acct", type=Path, help="a process-accounting file of the same run")
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.file.read_text().splitlines() if line.strip()]
    tests = [r for r in rows if r["test"] != "<collection>"]
    collection = [r for r in rows if r["test"] == "<collection>"]

    def cpu(r: dict) -> float:
        return r["own"] + r["children"]

    if args.acct:
        charged, other = charge(tests, acct_processes(args.acct))
        for r in tests:
            r["children"] = charged.get(r["test"], 0.0)
        print(f"processes below no worker: {sum(other.values()):.0f} CPU-s")
        for name, c in sorted(other.items(), key=lambda kv: -kv[1])[:10]:
            print(f"{c:8.1f}  {name}")

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
