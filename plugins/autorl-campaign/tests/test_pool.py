"""The `pool` executor: conformance, concurrency bounded by workers and CPU slots, disjoint GPUs,
results as jobs finish, and jobs that can never fit failing at once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from autorl_campaign.pool import PoolExecutor
from autorl_testing import ExecutorConformance

from autorl.errors import ConfigError
from autorl.executors import Placement, Slot


class TestPoolConformance(ExecutorConformance):
    plugin_module = "autorl_campaign.plugin"
    name = "pool"


class Tracker:
    """Records which jobs overlap and which GPUs each held."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[int] = set()
        self.peak = 0
        self.gpus_in_use: dict[int, tuple[int, ...]] = {}
        self.clashes: list[str] = []

    def job(self, item: tuple[int, float], placement: Placement) -> int:
        index, seconds = item
        with self.lock:
            for other, gpus in self.gpus_in_use.items():
                if set(gpus) & set(placement.gpus):
                    self.clashes.append(f"{index} and {other} share {placement.gpus}")
            self.gpus_in_use[index] = placement.gpus
            self.running.add(index)
            self.peak = max(self.peak, len(self.running))
        time.sleep(seconds)
        with self.lock:
            self.running.discard(index)
            del self.gpus_in_use[index]
        return index


def run(items: list[Any], slots: list[Slot], options: dict[str, Any], tracker: Tracker) -> list:
    return list(PoolExecutor().as_completed(tracker.job, items, slots, options))


def test_workers_bound_concurrency_and_results_come_as_jobs_finish() -> None:
    tracker = Tracker()
    items = [(0, 0.6), (1, 0.05), (2, 0.05), (3, 0.05)]
    done = run(items, [Slot()] * 4, {"workers": 2, "cpus": 8}, tracker)
    assert tracker.peak == 2
    assert [d.index for d in done][-1] == 0  # the slow first job does not hold the others back
    assert sorted(d.result for d in done) == [0, 1, 2, 3]


def test_cpu_slots_limit_what_runs_together() -> None:
    tracker = Tracker()
    items = [(i, 0.15) for i in range(4)]
    run(items, [Slot(cpus=2)] * 4, {"workers": 4, "cpus": 4}, tracker)
    assert tracker.peak == 2  # 4 cores, 2 per cell


def test_gpus_are_disjoint_and_returned_to_the_pool() -> None:
    tracker = Tracker()
    items = [(i, 0.1) for i in range(6)]
    done = run(items, [Slot(gpus=2)] * 6, {"workers": 6, "cpus": 64, "gpus": [0, 1, 2, 3]}, tracker)
    assert tracker.clashes == [] and tracker.peak == 2
    assert len(done) == 6 and all(d.error is None for d in done)


def test_a_job_that_can_never_fit_fails_at_once_and_the_rest_run() -> None:
    tracker = Tracker()
    items = [(0, 0.01), (1, 0.01)]
    done = run(items, [Slot(gpus=3), Slot()], {"workers": 2, "cpus": 2, "gpus": [0]}, tracker)
    by_index = {d.index: d for d in done}
    assert "needs 3 GPU(s) and this pool has 1 (0)" in (by_index[0].error or "")
    assert by_index[1].result == 1


def test_bad_options_are_clear_errors() -> None:
    tracker = Tracker()
    with pytest.raises(ConfigError, match="unknown option"):
        run([(0, 0)], [Slot()], {"worker": 2}, tracker)
    with pytest.raises(ConfigError, match="workers must be a positive integer"):
        run([(0, 0)], [Slot()], {"workers": 0}, tracker)
