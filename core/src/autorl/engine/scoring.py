"""Scoring a checkpoint: the baseline (cached across runs) and each submission, with the
task's evaluator, its config and contract; the details go to the run directory, never the
workspace."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from autorl.engine.baseline import baseline_key, cached_baseline
from autorl.engine.console import RunConsole
from autorl.engine.records_io import write_json
from autorl.engine.setup import Setup
from autorl.types import CheckpointInfo, EvalRequest


class Scorer:
    def __init__(self, setup: Setup, task: Any, seed: int, run_dir: Path, console: RunConsole):
        self.setup = setup
        self.task = task
        self.seed = seed
        self.run_dir = run_dir
        self.console = console

    def evaluate(self, model_dir: Path, work_dir: Path, label: str) -> dict[str, Any]:
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
                progress=self.console.eval_progress(label),
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
        result = self.evaluate(
            checkpoint,
            self.run_dir / "submissions" / str(submission_id),
            f"evaluating submission {submission_id}",
        )
        return result["score"], {
            "n": result["n"],
            "metrics": result["metrics"],
            "eval_seconds": result["seconds"],
        }
