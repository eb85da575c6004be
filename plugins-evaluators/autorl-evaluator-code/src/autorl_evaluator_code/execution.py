"""Check many programs in parallel, one confined process each (see :mod:`.sandbox`).

Threads only wait on child processes, so a thread pool of ``workers`` keeps ``workers`` programs
running at once. Each worker owns a slot, hence its own sandbox uid: one program's fork bomb
counts against its own RLIMIT_NPROC only, and its stragglers are found by that uid.
"""

from __future__ import annotations

import os
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from autorl_evaluator_code.sandbox import Limits, Outcome, run_program


def build_program(code: str, test: str, entry_point: str) -> str:
    """The HumanEval check program: the candidate, the problem's tests, ``check(entry_point)``."""
    return f"{code}\n\n{test}\n\ncheck({entry_point})\n"


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def run_programs(
    programs: Sequence[str],
    limits: Limits | None = None,
    *,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    **options: Any,
) -> list[Outcome]:
    """Outcomes in the order of ``programs``; ``workers=1`` runs them one after the other."""
    workers = max(1, workers or default_workers())
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(workers):
        slots.put(slot)
    done = 0

    def one(program: str) -> Outcome:
        slot = slots.get()
        try:
            return run_program(program, limits, slot=slot, **options)
        finally:
            slots.put(slot)

    results: list[Outcome] = []
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="code-sandbox") as pool:
        for outcome in pool.map(one, programs):
            results.append(outcome)
            done += 1
            if progress is not None:
                progress(done, len(programs))
    return results
