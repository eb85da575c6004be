"""``autorl run --resume RUN_DIR``: finish a run whose harness died (killed, OOM, reboot).

The agent died with the harness (its sandbox's namespaces end with it), so the agent phase is
over; what the run still owes is the grading of what the agent submitted. From the run's own
records: the manifest gives the config, ``submissions.jsonl`` every submission's last status.
Final ones keep their recorded scores (never re-evaluated); ``queued`` and ``evaluating`` ones
are evaluated from the harness's copy; ``received`` ones (their copy may be partial) are taken
in again from the workspace. Then the sealed evaluation (``sealed`` protocol: the selected
checkpoint and the baseline on the test split, which the original run had not done, since
its run.json never said ``completed``), the reports, and the results store, as a run ending
normally would. The task's eval split and the base model must hash as they did: a resumed run
is graded on exactly the data and model of the original.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autorl.config import RunConfig
from autorl.errors import AutorlError, ConfigError
from autorl.protocols import GradingService
from autorl.registry import Registry
from autorl_runner.budget import BudgetClock
from autorl_runner.console import RunConsole
from autorl_runner.context import RunContext
from autorl_runner.engine import apply_engine, record_grader
from autorl_runner.finish import finish
from autorl_runner.records_io import EventLog, read_submission_log, utc_now
from autorl_runner.run import Run, RunOutcome, empty_scoring, sealed_scoring
from autorl_runner.setup import Setup, prepare, resolve


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def resume_run(run_dir: Path, registry: Registry | None = None, quiet: bool = False) -> RunOutcome:
    run_dir = run_dir.resolve()
    manifest = _read(run_dir / "manifest.json")
    if manifest is None or not isinstance(manifest.get("config"), dict):
        raise ConfigError(
            f"{run_dir} is not a run that can be resumed: manifest.json is missing or unreadable",
            hint="pass the directory of a run whose harness stopped, e.g. runs/<run_id>",
        )
    previous = _read(run_dir / "run.json")
    if previous is not None and previous.get("status") == "completed":
        raise ConfigError(
            f"run {run_dir.name} already completed: nothing to resume",
            hint=f"re-render its report with `autorl report {run_dir}`",
        )
    recorded = dict(manifest["config"])
    # a run from before the sealed protocol was graded the reference way, and is finished so
    recorded.setdefault("scoring", {"protocol": "reference"})
    config = RunConfig.model_validate(
        {**recorded, "run_id": run_dir.name, "runs_dir": run_dir.parent}
    )
    # the engine and the precision its baseline was graded in (auto stays as it resolved)
    recorded_engine = manifest.get("engine")
    apply_engine(config, recorded_engine if isinstance(recorded_engine, dict) else None)
    engine = Run(config, registry=registry, quiet=quiet)
    with RunConsole(quiet=quiet) as console:
        return _finish_agentless(engine, manifest, previous, console)


def _finish_agentless(
    engine: Run, manifest: dict[str, Any], previous: dict[str, Any] | None, console: RunConsole
) -> RunOutcome:
    run_dir = engine.run_dir
    parts = resolve(engine.config, engine.registry)
    events = EventLog(run_dir / "events.jsonl")
    run_info: dict[str, Any] = {
        "status": "failed",
        "started": (previous or {}).get("started") or manifest.get("created"),
        "end_reason": "harness_stopped",
        "agent_exit_code": None,
        # the agent's time as the last heartbeat of the dead harness recorded it
        "agent_seconds": (previous or {}).get("agent_seconds"),
        "budget_seconds": engine.config.budget.wall_seconds,
        "scoring": empty_scoring(engine.config.scoring.protocol),
    }
    outcome: RunOutcome | None = None
    setup: Setup | None = None
    try:
        events.warning("run_resumed", previous_status=(previous or {}).get("status"))
        console.print(f"resuming run [bold]{engine.run_id}[/]: the agent phase is over")
        setup = prepare(engine.config, engine.registry, parts, console, run_dir)
        recorded = manifest.get("hashes") or {}
        changed = [
            k for k in ("eval", "test", "base_model") if recorded.get(k) != setup.hashes.get(k)
        ]
        if changed:
            raise ConfigError(
                f"cannot resume {engine.run_id}: the {' and '.join(changed)} no longer hash(es) "
                "as recorded in the manifest, so its scores would not be comparable",
                hint="restore the task data / base model of the original run",
            )
        ctx = RunContext(
            engine.config, engine.registry, parts, setup, engine.run_id, run_dir, events,
            console,
        )  # fmt: skip
        scorer = ctx.scorer
        baseline = _read(run_dir / "baseline.json") or scorer.baseline()
        record_grader(run_info, baseline)
        service, resumed = _grade_pending(ctx, baseline["score"])
        run_info.update(status="completed", resumed={"at": utc_now(), "evaluated": resumed})
        try:
            selection = service.selection()
            block = sealed_scoring(
                scorer, selection, baseline, engine.config, events, console, run_info
            )
        finally:
            service.release()
        outcome = RunOutcome.of(
            engine.run_id, run_dir, baseline, selection, block, run_info,
            engine.config.scoring.protocol,
        )  # fmt: skip
    except AutorlError as exc:
        run_info["error"] = str(exc)
        events.warning("run_failed", error=str(exc))
        raise
    finally:
        run_info["ended"] = utc_now()
        finish(run_dir, engine.run_id, run_info, engine.config.reports, engine.registry, setup,
               events, console)  # fmt: skip
    return outcome


def _grade_pending(ctx: RunContext, baseline_score: float) -> tuple[GradingService, list[int]]:
    """The service after grading what was pending (it keeps the selection's candidates),
    and the ids it graded."""
    run_dir = ctx.run_dir
    history = ctx.code_history()
    service = ctx.grading_service(BudgetClock(ctx.config.budget.wall_seconds), baseline_score)
    try:
        resumed = service.restore(read_submission_log(run_dir / "submissions.jsonl"))
        ctx.console.print(
            f"{len(resumed)} submission(s) to grade: {resumed}" if resumed else "nothing to grade"
        )
        service.drain()
        service.finalize("the resumed run ended before this submission's evaluation finished")
    finally:
        service.close()
    history.snapshot("resumed")
    return service, resumed
