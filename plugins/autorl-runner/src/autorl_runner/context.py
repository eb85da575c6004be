"""What every phase of one run shares, built the same way by a run and by ``--resume``: the
config, the components, the prepared setup, the scorer, the records, the console; and the one
wiring of the grading service both use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autorl.config import RunConfig
from autorl.events import SubmissionEvent
from autorl.protocols import CodeSnapshots
from autorl.registry import Registry
from autorl_runner.budget import BudgetClock
from autorl_runner.console import RunConsole
from autorl_runner.finish import observed
from autorl_runner.records_io import EventLog, SubmissionLog
from autorl_runner.scoring import Scorer
from autorl_runner.setup import Components, Setup


@dataclass
class RunContext:
    config: RunConfig
    registry: Registry
    parts: Components
    setup: Setup
    run_id: str
    run_dir: Path
    events: EventLog
    console: RunConsole
    scorer: Scorer = field(init=False)
    """The baseline's and the submissions' evaluations, under the run's deadlines."""

    def __post_init__(self) -> None:
        grader = self.config.grader
        self.scorer = Scorer(
            self.setup,
            self.parts.task,
            self.config.seed,
            self.run_dir,
            self.console,
            timeout_factor=grader.eval_timeout_factor,
            timeout_margin_s=grader.eval_timeout_margin_s,
        )

    @property
    def workspace(self) -> Path:
        return self.run_dir / "workspace"

    def code_history(self) -> CodeSnapshots:
        """The grading plugin's history of ``workspace/code`` (``code-history.git``)."""
        return self.setup.grader.code_history(
            self.run_dir / "code-history.git", self.workspace / "code"
        )

    def notify(self, event: SubmissionEvent) -> None:
        """A submission changed status: the event log, the observers, the terminal."""
        self.events.info("submission", **dict(event.record))
        observed(self.events, self.registry.on_submission(event))
        self.console.submission(event)

    def grading_service(
        self,
        clock: BudgetClock,
        baseline_score: float,
        evaluate: Callable[..., Any] | None = None,
        snapshot: Callable[[str], Any] | None = None,
    ) -> Any:
        """The grading plugin's service over this run's submissions log and storage."""
        cfg = self.config
        extra = {"snapshot": snapshot} if snapshot is not None else {}
        return self.setup.grader.service(
            base_model=self.setup.model_info.path,
            workspace=self.workspace,
            storage=self.run_dir / "submissions",
            log=SubmissionLog(self.run_dir / "submissions.jsonl"),
            clock=clock,
            max_submissions=cfg.budget.max_submissions,
            baseline_score=float(baseline_score),
            base_weight_hash=self.setup.base_hash,
            evaluate=evaluate or self.scorer.submission,
            notify=self.notify,
            run_id=self.run_id,
            keep_checkpoints=cfg.keep_checkpoints,
            tokenizer=cfg.grader.tokenizer,
            keep_scored=cfg.scoring.protocol == "sealed" and cfg.scoring.test_all,
            **extra,
        )
