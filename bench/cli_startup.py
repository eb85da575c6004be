"""Time CLI start-up: ``python -c pass``, ``autorl --help`` and ``autorl plugins list``.

Prints the median wall time of N runs of each, side by side, and the overhead over a bare
interpreter. Target: each autorl command at most 0.3 s on the project's 2-core machines.

    python bench/cli_startup.py [--runs 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.3


def commands() -> list[tuple[str, list[str]]]:
    script = Path(sys.executable).parent / "autorl"
    autorl_cmd = [str(script)] if script.exists() else [sys.executable, "-m", "autorl"]
    return [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("autorl --help", [*autorl_cmd, "--help"]),
        ("autorl plugins list", [*autorl_cmd, "plugins", "list"]),
    ]


def time_once(argv: list[str]) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTORL_")}
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr.decode()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per command (median taken)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args()
    rows = []
    for label, argv in commands():
        time_once(argv)  # warm the page cache and .pyc files
        times = [time_once(argv) for _ in range(args.runs)]
        rows.append(
            {
                "command": label,
                "median_s": statistics.median(times),
                "min_s": min(times),
                "max_s": max(times),
                "runs": args.runs,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    base = rows[0]["median_s"]
    print(f"{'command':<22}{'median':>9}{'min':>9}{'max':>9}{'over python':>13}  target")
    for row in rows:
        over = row["median_s"] - base
        verdict = "" if row is rows[0] else ("ok" if row["median_s"] <= TARGET_S else "SLOW")
        print(
            f"{row['command']:<22}{row['median_s']:>8.3f}s{row['min_s']:>8.3f}s"
            f"{row['max_s']:>8.3f}s{over:>12.3f}s  {verdict}"
        )


if __name__ == "__main__":
    main()
