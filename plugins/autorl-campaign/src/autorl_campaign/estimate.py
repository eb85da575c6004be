"""How long a campaign's cells will take, from how long such runs took before.

A cell's time is its agent's time plus the harness's (process start, preparing, the baseline,
grading, the sealed evaluation, reports, process exit). Both are measured, per task x model
(the agent's also per agent and budget: a scripted recipe stops long before its budget), from,
in order:

1. this campaign's finished cells (the store: from the child's start to its end);
2. the user's earlier runs: ``results.jsonl`` (each run's ``started``, ``ended``,
   ``agent_seconds``) of this campaign's runs, of the other campaigns beside it, and of
   ``runs/`` in the working directory; a run's record does not include its process's start
   and exit, so :data:`PROCESS_S` (or what this campaign measured of it) is added;
3. defaults: the agent uses its whole budget, the harness :data:`DEFAULT_HARNESS_S`.

The campaign's total is the cells laid out on the executor's lanes in order (each cell starts
on the first lane free), as the pool runs them.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autorl_records import posix_time

DEFAULT_HARNESS_S = 45.0
"""Harness time per cell with nothing to measure it from (tiny model on 2 cores: 25-50 s)."""
PROCESS_S = 12.0
"""A cell's process start and exit (imports, reports, results store) beyond its run record's
``started``..``ended`` (measured on the docs' example: 10-15 s on 2 busy cores)."""


def _span(start: Any, end: Any) -> float | None:
    a, b = posix_time(start), posix_time(end)
    return None if a is None or b is None or b < a else b - a


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass
class History:
    """Measured times: harness seconds per (task, model), agent seconds per (agent, task, model,
    budget), and how many measurements each came from."""

    harness: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    agent: dict[tuple[str, str, str, float], list[float]] = field(default_factory=dict)
    process: list[float] = field(default_factory=list)
    source: dict[tuple[str, str], str] = field(default_factory=dict)
    agent_source: dict[tuple[str, str, str, float], str] = field(default_factory=dict)

    def add(
        self,
        row: Mapping[str, Any],
        took: float,
        source: str,
        process: float | None = None,
    ) -> None:
        """One finished run: ``row`` has task, model, agent, budget_seconds, agent_seconds."""
        task, model = str(row.get("task")), str(row.get("model"))
        agent_s = row.get("agent_seconds")
        if not isinstance(agent_s, int | float):
            return
        key = (task, model)
        if self.source.setdefault(key, source) == source:  # else a closer source measured it
            self.harness.setdefault(key, []).append(max(0.0, took - agent_s))
        budget = float(row.get("budget_seconds") or 0.0)
        akey = (str(row.get("agent")), task, model, budget)
        if self.agent_source.setdefault(akey, source) == source:
            self.agent.setdefault(akey, []).append(agent_s)
        if process is not None:
            self.process.append(max(0.0, process))


def from_store(rows: Iterable[Mapping[str, Any]], logs: Path, history: History) -> None:
    """This campaign's completed cells: from the child's start (its ``.child.json``; a store
    from before it was written has the hand-off time, so the run's own times are used)."""
    from autorl_records import load_run

    from autorl.errors import AutorlError
    from autorl_campaign.liveness import child_path, read_child

    for row in rows:
        if row.get("status") != "completed" or not row.get("run_dir"):
            continue
        try:
            run = load_run(row["run_dir"]).run
        except AutorlError:
            continue
        ran = _span(run.started, run.ended) if run is not None else None
        child = read_child(child_path(logs, row.get("run_id") or ""))
        took = _span(child.started, row.get("ended")) if child is not None else None
        if took is not None and ran is not None:
            history.add(row, took, "this campaign", process=took - ran)
        elif ran is not None:
            history.add(row, ran + PROCESS_S, "this campaign")


def from_results(paths: Iterable[Path], history: History) -> None:
    """Earlier runs' summaries (``results.jsonl``), newest file first."""
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                run = json.loads(line)
            except ValueError:
                continue
            if not isinstance(run, dict) or run.get("status") != "completed":
                continue
            ran = _span(run.get("started"), run.get("ended"))
            if ran is not None:
                history.add(run, ran + PROCESS_S, "earlier runs")


def results_files(out_dir: Path) -> list[Path]:
    """Where earlier runs are recorded: this campaign's runs, its sibling campaigns', and
    ``runs/`` here; the most recently written first."""
    found = {out_dir / "runs" / "results.jsonl", Path("runs") / "results.jsonl"}
    parent = out_dir.resolve().parent
    if parent.is_dir():
        found.update(parent.glob("*/runs/results.jsonl"))
    existing = [p for p in found if p.is_file()]
    return sorted(existing, key=lambda p: p.stat().st_mtime, reverse=True)


@dataclass(frozen=True)
class CellEstimate:
    seconds: float
    measured: bool
    """False when a default stood in (the budget for the agent, or the harness default)."""


def cell_estimate(config: Mapping[str, Any], history: History) -> CellEstimate:
    budget = float(config["budget"]["wall_seconds"])
    task, model, agent = str(config["task"]), str(config["model"]), str(config.get("agent"))
    harness = _mean(history.harness.get((task, model), []))
    agent_s = _mean(history.agent.get((agent, task, model, budget), []))
    process = _mean(history.process)
    if (
        harness is not None
        and process is not None
        and history.source[(task, model)] != ("this campaign")
    ):
        harness += process - PROCESS_S  # what this campaign measured beats the constant
    seconds = (budget if agent_s is None else min(budget, agent_s)) + (
        DEFAULT_HARNESS_S if harness is None else harness
    )
    return CellEstimate(seconds, harness is not None and agent_s is not None)


def makespan(seconds: list[float], lanes: int) -> float:
    """Cells started in order, each on the first free lane: when the last one ends."""
    free = [0.0] * max(1, lanes)
    end = 0.0
    for s in seconds:
        start = heapq.heappop(free)
        end = max(end, start + s)
        heapq.heappush(free, start + s)
    return end


def lanes(executor: str, options: Mapping[str, Any], cpus_per_cell: float) -> int:
    """How many cells the executor runs at once (a guess for executors it does not know)."""
    cpus = os.cpu_count() or 1
    if executor == "pool":
        workers = options.get("workers", 2)
        workers = workers if isinstance(workers, int) and workers > 0 else 1
        room = float(options.get("cpus") or cpus)
        return max(1, min(workers, int(room // max(cpus_per_cell, 1e-9)) or 1))
    if executor == "ray":
        room = options.get("num_cpus") or cpus
        return max(1, int(float(room) // max(cpus_per_cell, 1e-9)))
    return 1
