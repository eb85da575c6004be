"""The ``pool`` executor: several cells at once on this machine, each holding its slots.

A cell's job mostly waits on its own ``autorl run`` process, so threads are enough; what limits
concurrency is the machine: ``workers`` cells at most, their CPU slots within ``cpus`` (default:
the machine's cores) and their GPU slots on disjoint devices from ``gpus`` (default: every
visible GPU). A job starts as soon as its slots are free, in item order; one that can never fit
(more GPUs than the machine has) fails at once with a message instead of waiting forever.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from autorl.errors import ConfigError
from autorl.executors import BaseExecutor, Done, Jobs, Placement, Slot, error_text

OPTIONS = ("workers", "cpus", "gpus")


def visible_gpus() -> list[int]:
    """GPU indices this process may use: CUDA_VISIBLE_DEVICES, else what torch counts (if it is
    already imported: a campaign never imports torch just to count), else none."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [int(x) for x in env.split(",") if x.strip().isdigit()]
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return list(range(torch.cuda.device_count()))
    return []


class PoolExecutor(BaseExecutor):
    name = "pool"
    OPTIONS = OPTIONS

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        with ThreadPoolExecutor(max(1, min(len(items), os.cpu_count() or 1))) as pool:
            return list(pool.map(fn, items))

    def run(self, jobs: Jobs) -> Iterator[Done]:
        fn, items, slots, options = jobs.fn, jobs.items, jobs.slots, jobs.options
        workers = _positive_int(options.get("workers", 2), "workers")
        cpus = float(options.get("cpus") or os.cpu_count() or 1)
        gpus = [int(g) for g in options["gpus"]] if "gpus" in options else visible_gpus()
        free_gpus = list(gpus)
        cpu_used = 0.0
        waiting = list(range(len(items)))
        running: dict[Future[Any], tuple[int, Placement]] = {}
        lock = threading.Lock()
        with ThreadPoolExecutor(workers, thread_name_prefix="autorl-cell") as pool:
            while waiting or running:
                for index in list(waiting):
                    need = slots[index]
                    problem = _never_fits(need, cpus, gpus)
                    if problem:
                        waiting.remove(index)
                        yield Done(index, error=problem)
                        continue
                    fits = (
                        len(running) < workers
                        and (cpu_used + need.cpus <= cpus + 1e-9 or not running)
                        and need.gpus <= len(free_gpus)
                    )
                    if not fits:
                        break  # keep item order: nothing jumps the queue
                    waiting.remove(index)
                    with lock:
                        taken = tuple(free_gpus[: need.gpus])
                        del free_gpus[: need.gpus]
                    cpu_used += need.cpus
                    placement = Placement(gpus=taken, worker=f"pool-{index}", cpus=need.cpus)
                    running[pool.submit(fn, items[index], placement)] = (index, placement)
                if not running:
                    continue
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in finished:
                    index, placement = running.pop(future)
                    cpu_used -= slots[index].cpus
                    with lock:
                        free_gpus.extend(placement.gpus)
                        free_gpus.sort()
                    error = future.exception()
                    if error is not None:
                        yield Done(index, error=error_text(error))
                    else:
                        yield Done(index, future.result())


def _never_fits(need: Slot, cpus: float, gpus: list[int]) -> str | None:
    if need.gpus > len(gpus):
        return (
            f"the cell needs {need.gpus} GPU(s) and this pool has {len(gpus)} "
            f"({', '.join(map(str, gpus)) or 'none visible'})"
        )
    return None


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"executor 'pool': option {name} must be a positive integer, got {value!r}",
            hint="e.g. [campaign] executor_options = { workers = 2 }",
        )
    return value
