"""What a campaign executor buys: N tiny cells run one after another (``local``) vs on K workers
(``pool``, and ``ray`` when installed and asked for), wall time of the whole campaign and the
speed-up as a ratio in one run.

Each cell is a real ``autorl run`` (tiny model, small gsm8k split, the scripted agent, a short
budget, seeds 0..N-1), so the ratio shows what cells that mostly wait (on their budget, on the
agent) gain, and what CPU-bound parts (evaluation, training) lose to sharing the cores. The
tiny model and the task's data are prepared once before timing.

    python bench/campaign_speedup.py [--cells 4] [--workers 2] [--budget 30] [--ray] [--json out]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import write_json

AUTORL = str(Path(sys.executable).parent / "autorl")


def campaign_file(root: Path, cells: int, budget: int) -> Path:
    path = root / "speed.yaml"
    path.write_text(
        json.dumps(
            {
                "task": "gsm8k",
                "model": "tiny",
                "agent": "scripted",
                "budget": {"wall_seconds": budget, "max_submissions": 1},
                "task_options": {"train_size": 20, "eval_size": 4},
                "campaign": {"name": "speed"},
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
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    subprocess.run(
        [AUTORL, "prepare", "--task", "gsm8k", "--model", "tiny"], check=True, capture_output=True
    )
    k = args.workers
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = campaign_file(root, args.cells, args.budget)
        serial = timed(path, root / "local", "local", [])
        pool = timed(path, root / "pool", "pool", [f"workers={k}"])
        summary = {
            "cells": args.cells,
            "workers": k,
            "cpus": os.cpu_count(),
            "budget_s": args.budget,
            "local_s": round(serial, 1),
            "pool_s": round(pool, 1),
            "pool_speedup": round(serial / pool, 2),
            "pool_speedup_per_worker": round(serial / pool / k, 2),
        }
        if args.ray:
            ray = timed(path, root / "ray", "ray", [f"num_cpus={k}"])
            summary.update(ray_s=round(ray, 1), ray_speedup=round(serial / ray, 2))
    print(json.dumps(summary, indent=2))
    write_json(args.json, summary)


if __name__ == "__main__":
    main()
