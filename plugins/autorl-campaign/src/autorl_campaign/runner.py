"""Run a campaign: record its cells, hand the unfinished ones to the executor, store each result
the moment it ends. Resuming is the same call: finished cells are skipped, cells that failed,
were interrupted or ended ``infra_error`` (the harness, not the agent, ended the run) run again
under a new attempt number, in a new run directory; the earlier one stays, and the store's
``attempts`` table keeps its record."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl_records import INFRA_ERROR

from autorl.errors import AutorlError, ConfigError
from autorl_campaign.cellrun import CellJob, run_cell
from autorl_campaign.results import run_results
from autorl_campaign.spec import Campaign, Cell
from autorl_campaign.store import CampaignStore

RESUMABLE = ("pending", "failed", "interrupted", "infra_error")
STOPPED = (130, 143, -2, -15)
"""Exit codes of a run stopped by SIGINT/SIGTERM (the campaign was stopped, not the run)."""


@dataclass
class Outcome:
    ran: int = 0
    completed: int = 0
    failed: int = 0
    infra_error: int = 0
    skipped: int = 0


def prepare_store(campaign: Campaign, resume: bool) -> tuple[CampaignStore, list[Cell]]:
    """Open the campaign's store, add the file's cells; the cells to run now."""
    store = CampaignStore(campaign.out_dir)
    interrupted = store.mark_interrupted()
    known = {c["cell_id"]: c for c in store.cells()}
    started = [c for c in known.values() if c["status"] != "pending"]
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
            print(
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
    if interrupted:
        print(f"{interrupted} cell(s) were running when the campaign stopped: they run again")
    status = {c["cell_id"]: c["status"] for c in store.cells()}
    todo = [c for c in campaign.cells if status.get(c.cell_id) in RESUMABLE]
    return store, todo


def record(store: CampaignStore, cell: Cell, result: Any, error: str | None) -> str:
    """Store one finished cell from its run's records; returns its status."""
    if error is not None:
        store.finish(cell.cell_id, status="failed", error=error)
        return "failed"
    run_dir = Path(result["run_dir"])
    where = {"run_id": result.get("run_id"), "run_dir": str(run_dir)}
    try:
        results, submissions = run_results(run_dir)
        results.update(where)
    except AutorlError as exc:
        tail = (result.get("tail") or "").strip().splitlines()[-5:]
        store.finish(
            cell.cell_id,
            status="failed",
            results=where,
            error=f"exit {result['returncode']}: {exc.message}; " + " | ".join(tail),
            worker=result.get("worker"),
        )
        return "failed"
    if results.get("end_reason") == INFRA_ERROR:  # the harness failed: not an agent result
        store.finish(
            cell.cell_id,
            status="infra_error",
            results=results,
            submissions=submissions,
            error=f"infra_error: {results.get('infra_cause') or 'unknown cause'}",
            worker=result.get("worker"),
        )
        return "infra_error"
    ok = result["returncode"] == 0 and results.get("end_reason") not in (None, "error")
    status = (
        "completed" if ok else "interrupted" if result["returncode"] in (130, -2, -15) else "failed"
    )
    error = None
    if not ok:
        tail = (result.get("tail") or "").strip().splitlines()[-5:]
        error = f"exit {result['returncode']}: " + " | ".join(tail)
    store.finish(
        cell.cell_id,
        status=status,
        results=results,
        submissions=submissions,
        error=error,
        worker=result.get("worker"),
    )
    return status


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
    store, todo = prepare_store(campaign, resume)
    outcome = Outcome(skipped=len(campaign.cells) - len(todo))
    out = Path(campaign.out_dir).resolve()
    jobs = []
    for cell in todo:
        attempt = (store.cell(cell.cell_id) or {}).get("attempts", 0) + 1
        jobs.append(
            CellJob(
                cell_id=cell.cell_id,
                run_id=f"{cell.cell_id}-{attempt}",
                config=cell.config,
                runs_dir=str(out / "runs"),
                logs_dir=str(out / "logs"),
                grader_gpus=cell.grader_gpus,
            )
        )
    for cell, job in zip(todo, jobs, strict=True):
        store.start(cell.cell_id, job.run_id, Path(job.runs_dir) / job.run_id)
    say(
        f"campaign {campaign.name}: {len(todo)} cell(s) to run, {outcome.skipped} already "
        f"finished; executor {campaign.executor}; store {store.path}"
    )
    try:
        for done in executor.as_completed(
            run_cell, jobs, [c.slot for c in todo], campaign.executor_options
        ):
            cell = todo[done.index]
            status = record(store, cell, done.result, done.error)
            outcome.ran += 1
            outcome.completed += status == "completed"
            outcome.infra_error += status == "infra_error"
            outcome.failed += status not in ("completed", "infra_error")
            row = store.cell(cell.cell_id) or {}
            best = row.get("improvement")
            shown = "" if best is None else f", improvement {best:+.2f}"
            say(
                f"[{outcome.ran}/{len(todo)}] cell {cell.cell_id} {cell.label}: {status}{shown}"
                + (f" ({row.get('error')})" if status != "completed" and row.get("error") else "")
            )
    except KeyboardInterrupt:
        say("interrupted: cells still running are marked interrupted; --resume runs them again")
        raise
    finally:
        store.mark_interrupted()
        store.close()
    return outcome
