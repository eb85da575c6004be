"""Scoring a checkpoint: the baseline (cached across runs) and each submission, with the
task's evaluator, its config and contract; the details go to the run directory, never the
workspace. A submission's evaluation has a deadline derived from the baseline's measured
evaluation time, so no checkpoint can hold the grader (docs/security.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from autorl.engine.baseline import baseline_key, cached_baseline
from autorl.engine.console import RunConsole
from autorl.engine.records_io import write_json
from autorl.engine.setup import Setup
from autorl.errors import EvaluationTimeout
from autorl.types import CheckpointInfo, EvalRequest, ProgressFn

DEFAULT_BASELINE_SECONDS = 60.0
"""The baseline's evaluation time assumed when its record has none (an old cache entry)."""


def with_deadline(progress: ProgressFn | None, limit_s: float | None) -> ProgressFn | None:
    """``progress`` that raises :class:`EvaluationTimeout` once ``limit_s`` has passed: every
    evaluator reports progress between batches, so this bounds any evaluation it runs."""
    if limit_s is None:
        return progress
    end = time.monotonic() + limit_s

    def guarded(done: int, total: int) -> None:
        if time.monotonic() > end:
            raise EvaluationTimeout(limit_s)
        if progress is not None:
            progress(done, total)

    return guarded


class Scorer:
    def __init__(
        self,
        setup: Setup,
        task: Any,
        seed: int,
        run_dir: Path,
        console: RunConsole,
        *,
        timeout_factor: float = 4.0,
        timeout_margin_s: float = 120.0,
    ):
        self.setup = setup
        self.task = task
        self.seed = seed
        self.run_dir = run_dir
        self.console = console
        self.timeout_factor = timeout_factor
        self.timeout_margin_s = timeout_margin_s

    def deadline_s(self) -> float:
        """A submission's evaluation deadline: the factor times the baseline's measured
        evaluation time, plus the margin (model loading, a LoRA merge)."""
        seconds = DEFAULT_BASELINE_SECONDS
        try:
            recorded = json.loads((self.run_dir / "baseline.json").read_text())["seconds"]
            if isinstance(recorded, int | float) and recorded > 0:
                seconds = float(recorded)
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return self.timeout_factor * seconds + self.timeout_margin_s

    def evaluate(
        self, model_dir: Path, work_dir: Path, label: str, deadline_s: float | None = None
    ) -> dict[str, Any]:
        setup = self.setup
        work_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        result = setup.evaluator.evaluate(
            EvalRequest(
                model_dir=model_dir,
                eval_path=setup.prepared.eval_path,
                config=setup.evaluator_config,
                work_dir=work_dir,
                seed=self.seed,
                progress=with_deadline(self.console.eval_progress(label), deadline_s),
                contract=setup.contract,
                base_model_dir=setup.model_info.path,
            )
        )
        return {
            "score": float(result.score),
            "n": result.n,
            "metrics": dict(result.metrics),
            "seconds": round(time.monotonic() - started, 2),
            "details": str(result.details_path) if result.details_path else None,
        }

    def baseline(self) -> dict[str, Any]:
        """The base model's score: cached by everything that could change it."""
        setup = self.setup
        key = baseline_key(
            task=self.task.name,
            task_version=str(getattr(self.task, "version", "0")),
            eval_hash=setup.hashes["eval"],
            model_hash=setup.base_hash,
            evaluator=setup.prepared.evaluator,
            evaluator_config={
                **{k: v for k, v in setup.evaluator_config.items() if k != "device"},
                "contract": setup.contract_ref,
            },
        )
        result = cached_baseline(
            key,
            lambda: self.evaluate(
                setup.model_info.path, self.run_dir / "baseline", "baseline evaluation"
            ),
        )
        write_json(self.run_dir / "baseline.json", result)
        return result

    def submission(
        self, submission_id: int, checkpoint: Path, info: CheckpointInfo
    ) -> tuple[float, dict[str, Any]]:
        """What the grading service records for a scored submission."""
        deadline = self.deadline_s()
        result = self.evaluate(
            checkpoint,
            self.run_dir / "submissions" / str(submission_id),
            f"evaluating submission {submission_id}",
            deadline_s=deadline,
        )
        return result["score"], {
            "n": result["n"],
            "metrics": result["metrics"],
            "eval_seconds": result["seconds"],
            "eval_deadline_s": round(deadline, 1),
        }
