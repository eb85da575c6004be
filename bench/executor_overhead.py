"""What running cells as Ray tasks costs, against the serial ``local`` executor.

Three numbers, all measured inside a network namespace of its own (Ray there binds only
loopback; see ``autorl_executor_ray.netns``):

- ``startup_s``: one trivial job on an instance the executor starts and shuts down itself (what a
  campaign without ``address`` pays once);
- ``overhead_ms_per_task``: ``--tasks`` trivial jobs through ``as_completed`` on a running
  instance, minus the same through ``local``, per job;
- ``speedup``: ``--sleep-tasks`` jobs that sleep 1 s, each holding one CPU, on ``--cpus`` CPUs:
  the serial time over Ray's (ideal: ``--cpus``).

    python bench/executor_overhead.py [--tasks 200] [--sleep-tasks 8] [--cpus 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import write_json


def noop(item: int, placement: Any) -> int:
    return item


def nap(seconds: float, placement: Any) -> float:
    time.sleep(seconds)
    return seconds


def timed(executor: Any, fn: Any, items: list[Any], slots: Any = None, **options: Any) -> float:
    started = time.perf_counter()
    done = list(executor.as_completed(fn, items, slots, options or None))
    elapsed = time.perf_counter() - started
    failed = [d for d in done if d.error]
    if len(done) != len(items) or failed:
        raise RuntimeError(f"{len(failed)} job(s) failed: {failed[:3]}")
    return elapsed


def measure(tasks: int, sleep_tasks: int, cpus: int) -> dict[str, Any]:
    """Runs in the namespace: every number of the summary."""
    from autorl_executor_ray.executor import RayExecutor
    from autorl_executor_ray.netns import start_ray

    from autorl.executors import SerialExecutor, Slot

    local, ray = SerialExecutor(), RayExecutor()
    startup = timed(RayExecutor(num_cpus=cpus), noop, [0])
    start_ray(num_cpus=cpus)
    timed(ray, noop, list(range(cpus)))  # warm: the workers exist before timing
    local_trivial = timed(local, noop, list(range(tasks)))
    ray_trivial = timed(ray, noop, list(range(tasks)))
    naps = [1.0] * sleep_tasks
    local_sleep = timed(local, nap, naps)
    ray_sleep = timed(ray, nap, naps, [Slot(cpus=1)] * sleep_tasks)
    return {
        "tasks": tasks,
        "sleep_tasks": sleep_tasks,
        "cpus": cpus,
        "startup_s": round(startup, 2),
        "local_trivial_s": round(local_trivial, 4),
        "ray_trivial_s": round(ray_trivial, 3),
        "overhead_ms_per_task": round(1000 * (ray_trivial - local_trivial) / max(tasks, 1), 2),
        "local_sleep_s": round(local_sleep, 2),
        "ray_sleep_s": round(ray_sleep, 2),
        "speedup": round(local_sleep / ray_sleep, 2),
        "ideal_speedup": min(cpus, sleep_tasks),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200, help="trivial jobs (overhead)")
    parser.add_argument("--sleep-tasks", type=int, default=8, help="1-second jobs (speed-up)")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the Ray instance")
    parser.add_argument("--json", type=Path, default=None, help="also write the summary here")
    args = parser.parse_args()
    if min(args.tasks, args.sleep_tasks, args.cpus) < 1:
        parser.error("--tasks, --sleep-tasks and --cpus must be at least 1")
    from autorl_executor_ray.netns import NetnsHost, NetnsUnavailable

    try:
        with NetnsHost() as host:
            summary = host.call(measure, args.tasks, args.sleep_tasks, args.cpus)
    except NetnsUnavailable as exc:
        print(f"error: {exc}: Ray is benchmarked only inside one", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    write_json(args.json, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
