"""One run, end to end: resolve, prepare, baseline, the agent phase, finish.

Each phase has a module and owns its state: :mod:`.setup` (components, then the prepared task,
model, runtime, evaluator and contract), :mod:`.scoring` (baseline and submissions),
:mod:`.agent_phase` (services, sandbox, supervision), :mod:`.finish` (integrity, reports,
observers). Final scores come only from the harness's own records (the submissions log in the
run directory, outside the workspace), never from files the agent could write.
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
from autorl.engine.agent_phase import AgentPhase
from autorl.engine.console import RunConsole
from autorl.engine.finish import finish, observed
from autorl.engine.records_io import EventLog, utc_now, write_json
from autorl.engine.scoring import Scorer
from autorl.engine.setup import Components, Setup, prepare, resolve, resolve_model, write_manifest
from autorl.errors import AutorlError, ConfigError
from autorl.events import RunStartEvent
from autorl.registry import Registry, get_registry

__all__ = ["Run", "RunOutcome", "resolve_model", "resume", "run"]


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    run_dir: Path
    baseline_score: float
    best_score: float | None
    end_reason: str

    @property
    def improvement(self) -> float | None:
        return None if self.best_score is None else self.best_score - self.baseline_score


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
        run_info: dict[str, Any] = {"status": "failed", "started": utc_now(), "end_reason": "error"}
        outcome: RunOutcome | None = None
        config_json = self.config.model_dump(mode="json")
        try:
            events.info("run_created", run_id=self.run_id, config=config_json)
            self.setup = setup = prepare(self.config, self.registry, parts, console, self.run_dir)
            write_manifest(self.run_dir, self.run_id, self.config, self.registry, parts, setup)
            events.info("manifest_written", hashes=setup.hashes)
            start = RunStartEvent(self.run_id, self.run_dir, config_json)
            observed(events, self.registry.on_run_start(start))
            console.print(f"run [bold]{self.run_id}[/] in {self.run_dir}")
            scorer = Scorer(
                setup,
                parts.task,
                self.config.seed,
                self.run_dir,
                console,
                timeout_factor=self.config.grader.eval_timeout_factor,
                timeout_margin_s=self.config.grader.eval_timeout_margin_s,
            )
            baseline = scorer.baseline()
            cached = " (cached)" if baseline.get("cached") else ""
            console.print(
                f"baseline {setup.prepared.metric}: [bold]{baseline['score']:.2f}[/]"
                f" on {baseline['n']} held-out examples{cached}"
            )
            events.info("baseline", score=baseline["score"], cached=baseline.get("cached"))
            phase = AgentPhase(
                config=self.config,
                registry=self.registry,
                parts=parts,
                setup=setup,
                scorer=scorer,
                run_id=self.run_id,
                run_dir=self.run_dir,
                events=events,
                console=console,
            )
            best, agent_info = phase.run(baseline["score"])
            outcome = RunOutcome(
                self.run_id, self.run_dir, baseline["score"], best, agent_info["end_reason"]
            )
            run_info.update(agent_info, status="completed")
        except KeyboardInterrupt:
            run_info.update(status="interrupted", end_reason="interrupted")
            events.warning("run_interrupted")
            raise
        except AutorlError as exc:
            run_info["error"] = str(exc)
            events.warning("run_failed", error=str(exc))
            raise
        except Exception as exc:
            run_info["error"] = f"{type(exc).__name__}: {exc}"
            events.warning("run_failed", error=run_info["error"])
            raise
        finally:
            run_info["ended"] = utc_now()
            write_json(self.run_dir / "run.json", run_info)
            finish(
                self.run_dir, self.run_id, self.config.reports, self.registry, self.setup,
                events, console,
            )  # fmt: skip
        return outcome


def run(config: RunConfig, registry: Registry | None = None, quiet: bool = False) -> RunOutcome:
    with terminate_as_interrupt():
        return Run(config, registry=registry, quiet=quiet).execute()


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a campaign stopping, a scheduler, ``kill``) ends the run like Ctrl-C: the agent
    is stopped, ``run.json`` says ``interrupted`` and the report is written, instead of the
    process vanishing mid-write. Only in the main thread (signals can only be set there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def resume(run_dir: Path, registry: Registry | None = None, quiet: bool = False) -> RunOutcome:
    """Finish a run whose harness died: see :mod:`autorl.engine.resume`."""
    from autorl.engine.resume import resume_run

    return resume_run(Path(run_dir), registry=registry, quiet=quiet)
