"""One run, end to end: resolve, prepare, baseline, the agent phase, the sealed evaluation,
finish.

Each phase has a module and owns its state: :mod:`.setup` (components, then the prepared task,
model, runtime, evaluator and contract), :mod:`.scoring` (baseline and submissions),
:mod:`.agent_phase` (services, sandbox, supervision), :mod:`.finish` (integrity, reports,
observers). Final scores come only from the harness's own records (the submissions log in the
run directory, outside the workspace), never from files the agent could write. Under the
``sealed`` protocol the run's score is the selected checkpoint's score on the sealed test split,
evaluated after the agent's phase (docs/scoring.md); a run the harness failed ends
``infra_error`` with its cause, never as the agent's result.
"""

from __future__ import annotations

import secrets
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autorl.config import RunConfig
from autorl.errors import AutorlError, ConfigError
from autorl.events import RunStartEvent
from autorl.registry import Registry, get_registry
from autorl_runner.agent_phase import AgentPhase
from autorl_runner.console import RunConsole
from autorl_runner.context import RunContext
from autorl_runner.engine import record_grader
from autorl_runner.finish import finish, observed
from autorl_runner.records_io import EventLog, utc_now
from autorl_runner.scoring import Scorer, SealedScoringError, final_scoring
from autorl_runner.setup import Components, Setup, prepare, resolve, resolve_model, write_manifest

__all__ = ["Run", "RunOutcome", "resolve_model", "resume", "run"]


@dataclass(frozen=True)
class RunOutcome:
    """What a run returns. ``baseline_score`` and ``best_score`` are on the split the agent's
    submissions were scored on (dev under ``sealed``); ``score`` is the run's score (the
    selected checkpoint's sealed test score; the best under ``reference``) and
    ``score_baseline`` the baseline on the same split."""

    run_id: str
    run_dir: Path
    baseline_score: float
    best_score: float | None
    end_reason: str
    score: float | None = None
    score_se: float | None = None
    score_baseline: float | None = None
    protocol: str = "reference"

    @classmethod
    def of(
        cls,
        run_id: str,
        run_dir: Path,
        baseline: dict[str, Any],
        selection: dict[str, Any],
        block: dict[str, Any],
        run_info: dict[str, Any],
        protocol: str,
    ) -> RunOutcome:
        """A run's (or a resumed run's) outcome from its baseline, selection and scoring."""
        return cls(
            run_id,
            run_dir,
            float(baseline["score"]),
            selection.get("best_dev"),
            run_info["end_reason"],
            score=block.get("score"),
            score_se=block.get("score_se"),
            score_baseline=block.get("baseline"),
            protocol=protocol,
        )

    @property
    def improvement(self) -> float | None:
        """The run's improvement: its score minus the baseline on the score's split."""
        if self.score is None:
            return None
        base = self.baseline_score if self.score_baseline is None else self.score_baseline
        return self.score - base


def empty_scoring(protocol: str, **fields: Any) -> dict[str, Any]:
    """run.json's ``scoring`` block of a run that has no score (yet): readers see its protocol
    (a run without the block is read as ``reference``)."""
    return {
        "protocol": protocol,
        "selection": {"submission_id": None, "rule": "none"},
        "score": None,
        "score_se": None,
        "baseline": None,
        "improvement": None,
        **fields,
    }


def sealed_scoring(
    scorer: Scorer,
    selection: dict[str, Any],
    baseline: dict[str, Any],
    config: RunConfig,
    events: EventLog,
    console: RunConsole,
    run_info: dict[str, Any],
) -> dict[str, Any]:
    """After the agent's phase: the selected checkpoint (and the baseline) on the sealed test
    split under ``sealed``, the best under ``reference``; the block goes into ``run_info``. A
    sealed evaluation that fails ends the run ``infra_error``."""
    protocol = config.scoring.protocol
    if protocol == "sealed":
        sid, rule = selection.get("submission_id"), selection.get("rule")
        chosen = f"submission {sid} ({rule})" if sid is not None else "no scored submission"
        console.print(f"sealed evaluation on the test split: {chosen} and the baseline")
    try:
        block = final_scoring(
            scorer,
            selection,
            baseline,
            protocol=protocol,
            test_all=config.scoring.test_all,
            on_event=events.info,
        )
    except SealedScoringError as exc:
        cause = str(exc)
        events.warning("sealed_evaluation_failed", error=cause)
        console.print(f"[bold red]{cause}: the run ends infra_error[/]")
        run_info.update(end_reason="infra_error", infra_cause=cause)
        block = empty_scoring(
            protocol,
            selection={"submission_id": selection.get("submission_id"),
                       "rule": selection.get("rule", "none")},
            error=cause,
        )  # fmt: skip
    run_info["scoring"] = block
    if block.get("score") is not None:
        where = "sealed test" if protocol == "sealed" else "held-out"
        gap = block.get("selection_gap")
        console.print(
            f"score ({where}, {protocol}): [bold]{block['score']:.2f}[/]"
            f" (SE {block.get('score_se')}), baseline {block['baseline']:.2f}"
            + (f"; selection gap (dev - test) {gap:+.2f}" if gap is not None else "")
        )
    return block


def _new_run_id(config: RunConfig) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{config.task}-{config.agent}-{secrets.token_hex(2)}"


class Run:
    """One run's identity and phases; :meth:`execute` is the whole life cycle."""

    def __init__(
        self, config: RunConfig, registry: Registry | None = None, quiet: bool = False
    ) -> None:
        self.config = config
        self.registry = registry or get_registry()
        self.quiet = quiet
        self.run_id = config.run_id or _new_run_id(config)
        self.run_dir = (config.runs_dir / self.run_id).resolve()
        self.workspace = self.run_dir / "workspace"
        self.parts: Components | None = None
        self.setup: Setup | None = None

    def execute(self) -> RunOutcome:
        with RunConsole(quiet=self.quiet) as console:
            return self._execute(console)

    def _execute(self, console: RunConsole) -> RunOutcome:
        self.parts = parts = resolve(self.config, self.registry)
        if self.run_dir.exists():
            raise ConfigError(
                f"run directory {self.run_dir} already exists",
                hint="choose another --run-id or remove the old run",
            )
        self.run_dir.mkdir(parents=True)
        events = EventLog(self.run_dir / "events.jsonl")
        protocol = self.config.scoring.protocol
        run_info: dict[str, Any] = {
            "status": "failed",
            "started": utc_now(),
            "end_reason": "error",
            "scoring": empty_scoring(protocol),
        }
        outcome: RunOutcome | None = None
        config_json = self.config.model_dump(mode="json")
        agent_phase_started = False
        try:
            events.info("run_created", run_id=self.run_id, config=config_json)
            self.setup = setup = prepare(self.config, self.registry, parts, console, self.run_dir)
            write_manifest(self.run_dir, self.run_id, self.config, self.registry, parts, setup)
            events.info("manifest_written", hashes=setup.hashes)
            start = RunStartEvent(self.run_id, self.run_dir, config_json)
            observed(events, self.registry.on_run_start(start))
            console.print(f"run [bold]{self.run_id}[/] in {self.run_dir}")
            ctx = RunContext(
                self.config, self.registry, parts, setup, self.run_id, self.run_dir, events,
                console,
            )  # fmt: skip
            scorer = ctx.scorer
            baseline = scorer.baseline()
            cached = " (cached)" if baseline.get("cached") else ""
            console.print(
                f"baseline {setup.prepared.metric}: [bold]{baseline['score']:.2f}[/]"
                f" on {baseline['n']} held-out examples{cached}"
            )
            events.info("baseline", score=baseline["score"], cached=baseline.get("cached"))
            record_grader(run_info, baseline)
            phase = AgentPhase(ctx, run_info)
            agent_phase_started = True
            try:
                selection, agent_info = phase.run(baseline["score"])
                run_info.update(agent_info, status="completed")
                if "infra_cause" in agent_info:  # the harness's side failed, not the agent
                    run_info.update(
                        end_reason="infra_error", agent_end_reason=agent_info["end_reason"]
                    )
                block = sealed_scoring(
                    scorer, selection, baseline, self.config, events, console, run_info
                )
            finally:
                phase.release()
            outcome = RunOutcome.of(
                self.run_id, self.run_dir, baseline, selection, block, run_info, protocol
            )
        except KeyboardInterrupt:
            run_info.update(status="interrupted", end_reason="interrupted")
            events.warning("run_interrupted")
            raise
        except AutorlError as exc:
            run_info["error"] = str(exc)
            if agent_phase_started:  # not a config error: the harness failed mid-run
                run_info.update(end_reason="infra_error", infra_cause=str(exc)[:500])
            events.warning("run_failed", error=str(exc))
            raise
        except Exception as exc:
            run_info["error"] = f"{type(exc).__name__}: {exc}"
            if TERMINATED.is_set():  # a SIGTERM that a library wrapped (pydantic: SchemaError)
                run_info.update(status="interrupted", end_reason="interrupted")
                events.warning("run_interrupted")
                raise
            run_info.update(end_reason="infra_error", infra_cause=run_info["error"][:500])
            events.warning("run_failed", error=run_info["error"], infra=True)
            raise
        finally:
            run_info["ended"] = utc_now()
            finish(
                self.run_dir, self.run_id, run_info, self.config.reports, self.registry,
                self.setup, events, console,
            )  # fmt: skip
        return outcome


def run(config: RunConfig, registry: Registry | None = None, quiet: bool = False) -> RunOutcome:
    with terminate_as_interrupt():
        return Run(config, registry=registry, quiet=quiet).execute()


TERMINATED = threading.Event()
"""Set when SIGTERM arrived: the KeyboardInterrupt it raises can surface wrapped in another
exception (pydantic-core turned one into a SchemaError), and the run is still interrupted."""


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a campaign stopping, a scheduler, ``kill``) ends the run like Ctrl-C: the agent
    is stopped, ``run.json`` says ``interrupted`` and the report is written, instead of the
    process vanishing mid-write. Only in the main thread (signals can only be set there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        TERMINATED.set()
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def resume(run_dir: Path, registry: Registry | None = None, quiet: bool = False) -> RunOutcome:
    """Finish a run whose harness died: see :mod:`autorl_runner.resume`."""
    from autorl_runner.resume import resume_run

    return resume_run(Path(run_dir), registry=registry, quiet=quiet)
