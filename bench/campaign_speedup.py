"""What a campaign executor buys: N tiny cells run one after another (``local``) vs on K workers
(``pool``, and ``ray`` when installed and asked for), wall time of the whole campaign and the
speed-up as a ratio in one run.

Each cell is a real ``autorl run`` (tiny model, small gsm8k split, the scripted agent, a short
budget, seeds 0..N-1), so the ratio shows what cells that mostly wait (on their budget, on the
agent) gain, and what CPU-bound parts (evaluation, training) lose to sharing the cores. The
tiny model, the task's data and the baseline cache are warmed by an untimed one-cell campaign
first (else the first executor timed would pay for them); executors then alternate over
``--repeats`` rounds and the median is reported. Ray must run where it may bind (a network
namespace: see autorl_executor_ray.netns).

    python bench/campaign_speedup.py [--cells 4] [--workers 2] [--budget 30] [--ray] [--json out]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import write_json

AUTORL = str(Path(sys.executable).parent / "autorl")


def campaign_file(root: Path, cells: int, budget: int, name: str = "speed") -> Path:
    path = root / f"{name}.yaml"
    path.write_text(
        json.dumps(
            {
                "task": "gsm8k",
                "model": "tiny",
                "agent": "scripted",
                "budget": {"wall_seconds": budget, "max_submissions": 1},
                "task_options": {"train_size": 20, "eval_size": 4},
                "campaign": {"name": name},
                "axes": {"seed": list(range(cells))},
            }
        )
    )
    return path


def timed(path: Path, out: Path, executor: str, options: list[str]) -> float:
    argv = [AUTORL, "campaign", "run", str(path), "--out", str(out), "--executor", executor]
    for option in options:
        argv += ["--executor-option", option]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ})
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{executor} campaign failed:\n{done.stdout}\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--budget", type=int, default=30, help="agent seconds per cell")
    parser.add_argument("--ray", action="store_true", help="also time the ray executor")
    parser.add_argument("--repeats", type=int, default=2, help="rounds; executors alternate")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    subprocess.run(
        [AUTORL, "prepare", "--task", "gsm8k", "--model", "tiny"], check=True, capture_output=True
    )
    k = args.workers
    executors = [("local", []), ("pool", [f"workers={k}"])]
    if args.ray:
        executors.append(("ray", [f"num_cpus={k}"]))
    times: dict[str, list[float]] = {name: [] for name, _ in executors}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        timed(campaign_file(root, 1, args.budget, "warm"), root / "warm", "local", [])
        path = campaign_file(root, args.cells, args.budget)
        for round_ in range(args.repeats):
            for name, options in executors if round_ % 2 == 0 else executors[::-1]:
                times[name].append(timed(path, root / f"{name}-{round_}", name, options))
    median = {name: statistics.median(values) for name, values in times.items()}
    summary = {
        "cells": args.cells,
        "workers": k,
        "cpus": os.cpu_count(),
        "budget_s": args.budget,
        "repeats": args.repeats,
        **{f"{name}_s": round(value, 1) for name, value in median.items()},
        **{f"{name}_runs_s": [round(v, 1) for v in values] for name, values in times.items()},
    }
    for name in median:
        if name != "local":
            summary[f"{name}_speedup"] = round(median["local"] / median[name], 2)
            summary[f"{name}_speedup_per_worker"] = round(median["local"] / median[name] / k, 2)
    print(json.dumps(summary, indent=2))
    write_json(args.json, summary)


if __name__ == "__main__":
    main()
