"""Run a campaign: record its cells, hand the unfinished ones to the executor, store each result
the moment it ends. Resuming is the same call: finished cells are skipped, cells that failed,
were interrupted or ended ``infra_error`` (the harness, not the agent, ended the run) run again
under a new attempt number, in a new run directory; the earlier one stays, and the store's
``attempts`` table keeps its record.

The store follows the runs: a cell's outcome is what its run recorded (``run.json`` through
:func:`autorl_records.load_run`), read when its child ends, and again for every cell left
``queued`` or ``running`` when a campaign process stopped (Ctrl-C, SIGTERM, or SIGKILL: then the
next ``--resume`` settles them, after waiting for their runs to finish recording themselves).
A run that recorded ``completed`` is never run again."""

from __future__ import annotations

import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl_records import INFRA_ERROR, load_run

from autorl.errors import AutorlError, ConfigError
from autorl_campaign import liveness
from autorl_campaign.cellrun import (
    STOP_GRACE_S,
    CellJob,
    allow_starts,
    run_cell,
    stop_children,
)
from autorl_campaign.results import run_results
from autorl_campaign.spec import Campaign, Cell
from autorl_campaign.store import CampaignStore

RESUMABLE = ("pending", "queued", "failed", "interrupted", "infra_error")
STOPPED = (130, 143, -2, -15)
"""Exit codes of a run stopped by SIGINT/SIGTERM (the campaign was stopped, not the run)."""
WATCH_S = 0.5
"""How often the campaign looks for cells whose run has started (to mark them running)."""
RUNNER_KEYS = ("runner_pid", "runner_started", "runner_host")


@dataclass
class Outcome:
    ran: int = 0
    completed: int = 0
    failed: int = 0
    infra_error: int = 0
    skipped: int = 0


def prepare_store(
    campaign: Campaign, resume: bool, say: Callable[[str], None] = print
) -> tuple[CampaignStore, list[Cell]]:
    """Open the campaign's store, settle what a stopped campaign left, add the file's cells;
    the cells to run now."""
    store = CampaignStore(campaign.out_dir)
    try:
        refuse_if_running(store, campaign)
        settled = settle(store, logs_dir(campaign), wait_s=STOP_GRACE_S)
    except BaseException:
        store.close()
        raise
    known = {c["cell_id"]: c for c in store.cells()}
    started = [c for c in known.values() if c["status"] != "pending" or c["attempts"]]
    if started and not resume:
        counts = store.counts()
        store.close()
        raise ConfigError(
            f"campaign {campaign.name!r} in {campaign.out_dir} has already run: "
            + ", ".join(f"{n} {s}" for s, n in counts.items() if n),
            hint="add --resume to run what is left (finished cells are kept; failed, "
            "interrupted and infra_error ones run again), or choose another directory with --out",
        )
    meta = store.meta()
    if meta.get("source_hash") and meta["source_hash"] != campaign.source_hash:
        stale = set(known) - {c.cell_id for c in campaign.cells}
        if stale:
            say(
                f"note: {campaign.path} changed since the campaign started; {len(stale)} "
                "cell(s) in the store are no longer in it (kept, not run)"
            )
    store.set_meta(
        name=campaign.name,
        file=str(campaign.path),
        source_hash=campaign.source_hash,
        axes=list(campaign.axes),
    )
    store.add_cells([c.store_row() for c in campaign.cells])
    shutil.copyfile(campaign.path, Path(campaign.out_dir) / f"campaign{campaign.path.suffix}")
    if settled:
        say(
            "cells the stopped campaign left, as their runs recorded them: "
            + ", ".join(f"{n} {s}" for s, n in sorted(settled.items()))
        )
    status = {c["cell_id"]: c["status"] for c in store.cells()}
    todo = [c for c in campaign.cells if status.get(c.cell_id) in RESUMABLE]
    return store, todo


def logs_dir(campaign: Campaign) -> Path:
    return Path(campaign.out_dir) / "logs"


def refuse_if_running(store: CampaignStore, campaign: Campaign) -> None:
    """Two campaign processes on one directory would run cells twice."""
    meta = store.meta()
    if liveness.runner_alive(meta):
        raise ConfigError(
            f"campaign {campaign.name!r} in {campaign.out_dir} is running now (process "
            f"{meta.get('runner_pid')} on {meta.get('runner_host')})",
            hint=f"wait for it, or stop it (Ctrl-C or kill {meta.get('runner_pid')}) and "
            f"resume: autorl campaign run {campaign.path} --resume",
        )


def mark_started(store: CampaignStore, logs: Path, rows: list[dict[str, Any]]) -> None:
    """Queued cells whose child has started (its job wrote ``<run id>.child.json``): running,
    from when it started."""
    for row in rows:
        if row["status"] != "queued" or not row.get("run_id"):
            continue
        child = liveness.read_child(liveness.child_path(logs, row["run_id"]))
        if child is not None:
            store.start(row["cell_id"], child.run_id, child.run_dir, child.started, child.host)


def settle(store: CampaignStore, logs: Path, wait_s: float = 0.0) -> dict[str, int]:
    """Make the store say what the runs say, for cells no campaign process is running now:

    - a queued cell whose child started is running; one that never started is pending again;
    - a running cell's child still alive is waited for (up to ``wait_s``: it was told to stop
      and is recording itself), then the cell gets what its run recorded;
    - an ended cell whose run recorded ``completed`` (a store written before it knew) is
      completed, so it never runs again.

    Returns how many cells got each status."""
    mark_started(store, logs, store.cells("queued"))
    settled: dict[str, int] = {}
    running = store.cells("running")
    deadline = time.monotonic() + wait_s
    for row in running:
        child = liveness.read_child(liveness.child_path(logs, row["run_id"] or ""))
        while child is not None and child.alive() and time.monotonic() < deadline:
            time.sleep(0.5)
        if child is not None and child.alive():
            raise ConfigError(
                f"cell {row['cell_id']}'s run {row['run_dir']} is still running (process "
                f"{child.pid}) although its campaign stopped",
                hint=f"wait for it to end, or stop it (kill {child.pid}), then run again",
            )
        run_dir = child.run_dir if child is not None else row["run_dir"]  # a retry's, if any
        status = record_run(store, row["cell_id"], run_dir, None, None, None)
        settled[status] = settled.get(status, 0) + 1
    for row in store.cells():
        ended = row["status"] in ("failed", "interrupted") and row.get("run_dir")
        if ended and _recorded(Path(row["run_dir"])) == "completed":
            status = record_run(store, row["cell_id"], row["run_dir"], None, None, None)
            settled[status] = settled.get(status, 0) + 1
    store.unqueue()
    return settled


def _recorded(run_dir: Path) -> str | None:
    try:
        return load_run(run_dir).status
    except AutorlError:
        return None


def observed_status(row: dict[str, Any], runner_up: bool, logs: Path) -> str:
    """What a cell is now, from its processes and its run rather than the store alone (which a
    killed campaign could not update): running only while its run's process lives."""
    status = row["status"]
    if status == "queued":
        return "queued" if runner_up else "pending"
    if status != "running":
        return status
    child = liveness.read_child(liveness.child_path(logs, row.get("run_id") or ""))
    alive = child.alive() if child is not None else None
    run_dir = Path(child.run_dir if child is not None else row.get("run_dir") or "")
    if alive is None:
        alive = liveness.heartbeat_alive(run_dir)
    if alive is None:  # nothing to check it by: as its campaign process is
        alive = runner_up
    if alive:
        return "running"
    try:
        record_ = load_run(run_dir)
    except AutorlError:
        return outcome("incomplete", None, None)
    end = record_.run.end_reason if record_.run is not None else None
    return outcome(record_.status, end, None)


def record(store: CampaignStore, cell: Cell, result: Any, error: str | None) -> str:
    """Store one finished cell from its run's records; returns its status."""
    row = store.cell(cell.cell_id) or {}
    if error is not None:
        run_dir = row.get("run_dir")
        began = row.get("status") == "running" and run_dir
        if began and (Path(run_dir) / "manifest.json").exists():
            return record_run(store, cell.cell_id, run_dir, None, error, None)  # it had started
        store.finish(cell.cell_id, status="failed", error=error)
        return "failed"
    tail = (result.get("tail") or "").strip().splitlines()[-5:]
    note = f"exit {result['returncode']}: " + " | ".join(tail)
    return record_run(
        store,
        cell.cell_id,
        result["run_dir"],
        result["returncode"],
        note,
        result.get("worker"),
        result.get("ended"),
    )


def outcome(run_status: str, end_reason: str | None, returncode: int | None) -> str:
    """A cell's status from what its run recorded. A run whose harness died before it could
    record its end (``running`` or no ``run.json``) was interrupted when it was stopped (a
    signal, or its campaign gone: ``returncode`` None), failed otherwise."""
    if end_reason == INFRA_ERROR:  # the harness failed: not an agent result
        return "infra_error"
    if run_status in ("completed", "failed", "interrupted"):
        return run_status
    return "interrupted" if returncode is None or returncode in STOPPED else "failed"


def record_run(
    store: CampaignStore,
    cell_id: str,
    run_dir: Path | str,
    returncode: int | None,
    note: str | None,
    worker: str | None,
    ended: str | None = None,
) -> str:
    """Store the cell as its run in ``run_dir`` recorded itself; returns the status. ``ended``:
    when its process exited (default: when the run recorded its end)."""
    run_dir = Path(run_dir)
    where = {"run_id": run_dir.name, "run_dir": str(run_dir)}
    try:
        results, submissions = run_results(run_dir)
    except AutorlError as exc:  # no manifest: it stopped (or failed) before it was a run
        status = outcome("incomplete", None, returncode)
        store.finish(
            cell_id,
            status=status,
            results=where,
            error=f"{exc.message}; {note}" if note else exc.message,
            worker=worker,
        )
        return status
    results.update(where)
    status = outcome(results["run_status"], results.get("end_reason"), returncode)
    error = None
    if status == "infra_error":
        error = f"infra_error: {results.get('infra_cause') or 'unknown cause'}"
    elif status != "completed":
        error = results.get("run_error") or note or f"the run recorded {results['run_status']}"
    store.finish(
        cell_id,
        status=status,
        results=results,
        submissions=submissions,
        error=error,
        worker=worker,
        ended=ended or results.get("run_ended"),
    )
    return status


class _Watcher(threading.Thread):
    """Marks queued cells running as their runs start (any executor: it reads the files the
    jobs write), so the store never calls a waiting cell running."""

    def __init__(self, store: CampaignStore, logs: Path) -> None:
        super().__init__(name="autorl-campaign-watcher", daemon=True)
        self.store, self.logs = store, logs
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(WATCH_S):
            mark_started(self.store, self.logs, self.store.cells("queued"))

    def stop(self) -> None:
        self.done.set()
        self.join()


@contextmanager
def stopping() -> Iterator[None]:
    """SIGINT and SIGTERM stop the campaign the same way: every cell's run is told to stop
    (SIGTERM: it stops its agent and records itself ``interrupted``), then KeyboardInterrupt
    unwinds the campaign, which waits for them and stores what they recorded. A second
    signal only repeats the stop (the store is being settled)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopped = threading.Event()

    def stop(signum: int, frame: object) -> None:
        stop_children()
        if not stopped.is_set():
            stopped.set()
            raise KeyboardInterrupt(f"signal {signum}")

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        if stopped.is_set():  # still quiet while the store settles; restored after it
            signal.signal(signal.SIGINT, lambda s, f: stop_children())
            signal.signal(signal.SIGTERM, lambda s, f: stop_children())
        else:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def run_campaign(
    campaign: Campaign,
    *,
    resume: bool = False,
    registry: Any = None,
    say: Callable[[str], None] = print,
) -> Outcome:
    """Run every unfinished cell through the campaign's executor; store each as it ends."""
    from autorl.registry import get_registry

    registry = registry or get_registry()
    executor = registry.create("executor", campaign.executor)
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    store, todo = prepare_store(campaign, resume, say)
    outcome_ = Outcome(skipped=len(campaign.cells) - len(todo))
    out = Path(campaign.out_dir).resolve()
    logs = logs_dir(campaign)
    me = liveness.this_process()
    store.set_meta(
        runner_pid=str(me["pid"]), runner_started=str(me["created"]), runner_host=me["host"]
    )
    jobs = []
    for cell in todo:
        attempt = (store.cell(cell.cell_id) or {}).get("attempts", 0) + 1
        job = CellJob(
            cell_id=cell.cell_id,
            run_id=f"{cell.cell_id}-{attempt}",
            config=cell.config,
            runs_dir=str(out / "runs"),
            logs_dir=str(out / "logs"),
            grader_gpus=cell.grader_gpus,
        )
        jobs.append(job)
        store.queue(cell.cell_id, job.run_id, Path(job.runs_dir) / job.run_id)
    say(
        f"campaign {campaign.name}: {len(todo)} cell(s) to run, {outcome_.skipped} already "
        f"finished; executor {campaign.executor}; store {store.path}"
    )
    watcher = _Watcher(store, logs)
    watcher.start()
    allow_starts()
    try:
        with stopping():
            for done in executor.as_completed(
                run_cell, jobs, [c.slot for c in todo], campaign.executor_options
            ):
                cell = todo[done.index]
                mark_started(store, logs, [store.cell(cell.cell_id) or {"status": None}])
                status = record(store, cell, done.result, done.error)
                outcome_.ran += 1
                outcome_.completed += status == "completed"
                outcome_.infra_error += status == "infra_error"
                outcome_.failed += status not in ("completed", "infra_error")
                row = store.cell(cell.cell_id) or {}
                best = row.get("improvement")
                shown = "" if best is None else f", improvement {best:+.2f}"
                why = row.get("error") if status != "completed" else None
                say(
                    f"[{outcome_.ran}/{len(todo)}] cell {cell.cell_id} {cell.label}: {status}"
                    + shown
                    + (f" ({why})" if why else "")
                )
    except KeyboardInterrupt:
        say("stopping: the cells' runs were told to stop; storing what each recorded")
        raise
    finally:
        watcher.stop()
        try:
            settle(store, logs, wait_s=STOP_GRACE_S)
        finally:
            store.set_meta(**dict.fromkeys(RUNNER_KEYS, ""))
            store.close()
            if threading.current_thread() is threading.main_thread():
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
    return outcome_
