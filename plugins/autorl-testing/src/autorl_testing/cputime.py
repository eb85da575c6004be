"""CPU time per test (``pytest --cpu-times=FILE``): where a CPU-bound suite's time goes.

On two busy cores a test's wall time says little about what it costs the others: a run that
waits on its sandbox for a minute costs nothing, an import of torch in a subprocess costs
seconds. Each test (setup, call and teardown together) appends one JSON line to ``FILE``:
the worker's own CPU seconds, its reaped children's (every process a test starts and waits
for, with theirs), and the wall seconds. Daemons a test does not wait for (dockerd, a Ray
instance) are not counted. Workers append to one file; ``bench/cpu_times.py`` sums it.
Each line also holds the test's start (epoch seconds) and the worker's pid: with the kernel's
process accounting (``accton``), ``bench/cpu_times.py --acct`` charges every process, the
sandboxed and the orphaned included, to the test that ran in its ancestor worker.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-times",
        metavar="FILE",
        default=None,
        help="append each test's CPU seconds (own, children's) and wall seconds to FILE",
    )


def _cpu() -> tuple[float, float]:
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator:
    path = item.config.getoption("cpu_times")
    if not path:
        return (yield)
    own, children = _cpu()
    began, start = time.time(), time.monotonic()
    try:
        return (yield)
    finally:
        own2, children2 = _cpu()
        line = {
            "test": item.nodeid,
            "own": round(own2 - own, 3),
            "children": round(children2 - children, 3),
            "wall": round(time.monotonic() - start, 3),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            "start": round(began, 2),
            "pid": os.getpid(),
        }
        with open(path, "a") as out:
            out.write(json.dumps(line) + "\n")


def pytest_collection_finish(session: pytest.Session) -> None:
    """The worker's CPU until its tests start (imports, collection), as a line of its own."""
    path = session.config.getoption("cpu_times")
    if path:
        own, children = _cpu()
        line = {"test": "<collection>", "own": round(own, 3), "children": round(children, 3),
                "wall": None, "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}  # fmt: skip
        with open(path, "a") as out:
            out.write(json.dumps(line) + "\n")
