"""Scoring a checkpoint: the baseline (cached across runs) and each submission, with the
task's evaluator, its config and contract; the details go to the run directory, never the
workspace. A submission's evaluation has a deadline derived from the baseline's measured
evaluation time, so no checkpoint can hold the grader (docs/security.md)."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autorl.config import ENGINE_PRECISION_ENV, GENERATION_BACKEND_ENV
from autorl.errors import EvaluationTimeout
from autorl.types import CheckpointInfo, EvalRequest, ProgressFn
from autorl_runner.baseline import baseline_key, cached_baseline
from autorl_runner.console import RunConsole
from autorl_runner.records_io import write_json
from autorl_runner.setup import Setup

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
        self,
        model_dir: Path,
        work_dir: Path,
        label: str,
        deadline_s: float | None = None,
        eval_path: Path | None = None,
    ) -> dict[str, Any]:
        """One evaluation on ``eval_path`` (default: the run's eval split, dev under
        ``sealed``)."""
        setup = self.setup
        work_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        result = setup.evaluator.evaluate(
            EvalRequest(
                model_dir=model_dir,
                eval_path=eval_path or setup.prepared.eval_path,
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

    def _baseline_key(self, split_hash: str) -> str:
        setup = self.setup
        config = {
            **{k: v for k, v in setup.evaluator_config.items() if k != "device"},
            "contract": setup.contract_ref,
        }
        # an engine other than the default transformers path may round differently (bf16):
        # its baselines are its own, per precision (the default's key is unchanged, so its
        # cache still hits)
        engine = os.environ.get(GENERATION_BACKEND_ENV, "").strip().lower()
        if engine and engine != "transformers":
            config["engine"] = engine
            precision = os.environ.get(ENGINE_PRECISION_ENV, "").strip().lower()
            if precision and precision != "fp32":
                config["precision"] = precision
        return baseline_key(
            task=self.task.name,
            task_version=str(getattr(self.task, "version", "0")),
            eval_hash=split_hash,
            model_hash=setup.base_hash,
            evaluator=setup.prepared.evaluator,
            evaluator_config=config,
        )

    def baseline(self) -> dict[str, Any]:
        """The base model's score on the eval split (dev under ``sealed``): cached by
        everything that could change it."""
        setup = self.setup
        result = cached_baseline(
            self._baseline_key(setup.hashes["eval"]),
            lambda: self.evaluate(
                setup.model_info.path, self.run_dir / "baseline", "baseline evaluation"
            ),
        )
        write_json(self.run_dir / "baseline.json", result)
        return result

    def test_baseline(self) -> dict[str, Any]:
        """The base model's score on the sealed test split, cached by the same key as the dev
        one with the test split's hash; only after the agent's phase."""
        setup = self.setup
        test_path = setup.prepared.test_path
        if test_path is None or "test" not in setup.hashes:
            raise SealedScoringError("the run has no sealed test split")
        result = cached_baseline(
            self._baseline_key(setup.hashes["test"]),
            lambda: self.evaluate(
                setup.model_info.path,
                self.run_dir / "sealed" / "baseline",
                "baseline on the sealed test split",
                eval_path=test_path,
            ),
        )
        write_json(self.run_dir / "baseline-test.json", result)
        return result

    def sealed(self, submission_id: int, graded: Path, deadline_s: float) -> dict[str, Any]:
        """One submission on the sealed test split (after the agent's phase)."""
        setup = self.setup
        assert setup.prepared.test_path is not None
        result = self.evaluate(
            graded,
            self.run_dir / "sealed" / str(submission_id),
            f"submission {submission_id} on the sealed test split",
            deadline_s=deadline_s,
            eval_path=setup.prepared.test_path,
        )
        write_json(self.run_dir / "sealed" / f"{submission_id}.json", result)
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
        details = None  # the evaluator's per-example file, relative to the run (analyses)
        if result["details"]:
            with contextlib.suppress(ValueError):  # a file outside the run is not named
                details = str(Path(result["details"]).relative_to(self.run_dir))
        return result["score"], {
            "n": result["n"],
            "metrics": result["metrics"],
            "eval_seconds": result["seconds"],
            "eval_deadline_s": round(deadline, 1),
            "details": details,
        }


def score_se(result: dict[str, Any]) -> float | None:
    """A score's standard error in points: the evaluator's ``score_se`` metric when it reports
    one, else the binomial 100*sqrt(p(1-p)/n) of a percentage over ``n`` examples."""
    metrics = result.get("metrics") or {}
    se = metrics.get("score_se") if isinstance(metrics, dict) else None
    if isinstance(se, int | float) and not isinstance(se, bool) and math.isfinite(se):
        return round(float(se), 2)
    score, n = result.get("score"), result.get("n")
    if isinstance(score, int | float) and isinstance(n, int) and n > 0 and 0 <= score <= 100:
        p = score / 100
        return round(100 * math.sqrt(p * (1 - p) / n), 2)
    return None


def _sum_se(*errors: float | None) -> float | None:
    """The SE of a sum or difference of independent estimates (None if one is unknown)."""
    if any(e is None for e in errors):
        return None
    return round(math.sqrt(sum(float(e) ** 2 for e in errors)), 2)  # type: ignore[arg-type]


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 4)


def scored_submissions(run_dir: Path) -> dict[int, dict[str, Any]]:
    """Each scored submission's last record (score, n, metrics) from the harness's own
    submissions log, never from anything the agent wrote."""
    from autorl_runner.records_io import read_submission_log

    merged: dict[int, dict[str, Any]] = {}
    for entry in read_submission_log(run_dir / "submissions.jsonl"):
        sid = entry.get("submission_id")
        if isinstance(sid, int) and not isinstance(sid, bool) and "status" in entry:
            merged.setdefault(sid, {}).update(entry)
    return {
        sid: e
        for sid, e in merged.items()
        if e.get("status") == "scored" and isinstance(e.get("score"), int | float)
    }


def _dev_result(entry: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """A scored submission's dev result; a copy of the base was scored as the baseline."""
    if entry.get("copy_of_base"):
        return baseline
    return {"score": entry["score"], "n": entry.get("n"), "metrics": entry.get("metrics") or {}}


class SealedScoringError(RuntimeError):
    """The sealed evaluation could not be done: the run ends ``infra_error``."""


def _test_deadline(scorer: Scorer) -> float:
    """A sealed evaluation's deadline: the dev one's, its evaluation part scaled by the test
    split's size relative to dev's."""
    sizes = scorer.setup.split_sizes
    scale = max(1.0, sizes.get("test", 1) / max(1, sizes.get("dev", 1)))
    margin = scorer.timeout_margin_s
    return (scorer.deadline_s() - margin) * scale + margin


def _headline(
    score: float | None, se: float | None, baseline: float, baseline_se: float | None
) -> dict[str, Any]:
    """The block's headline keys, the same under both protocols: the score, the baseline it is
    compared with, and the improvement, each with its standard error."""
    return {
        "score": score,
        "score_se": se,
        "baseline": baseline,
        "baseline_se": baseline_se,
        "improvement": _diff(score, baseline),
        "improvement_se": _sum_se(se, baseline_se) if score is not None else None,
    }


def final_scoring(
    scorer: Scorer,
    selection: dict[str, Any],
    baseline: dict[str, Any],
    *,
    protocol: str,
    test_all: bool = False,
    on_event: Any = None,
) -> dict[str, Any]:
    """run.json's ``scoring`` block (docs/scoring.md). Under ``sealed``, the only place the
    test split is opened: the baseline (cached by the test split's hash) and the selected
    checkpoint (every scored one with ``test_all``), after the agent's phase has ended."""
    run_dir = scorer.run_dir
    scored = scored_submissions(run_dir)
    baseline_se = score_se(baseline)
    note = on_event or (lambda event, **fields: None)
    if protocol == "reference":
        best_id = max(scored, key=lambda s: (scored[s]["score"], s), default=None)
        best = _dev_result(scored[best_id], baseline) if best_id is not None else None
        score = float(best["score"]) if best else None
        se = score_se(best) if best else None
        return {
            "protocol": "reference",
            "selection": {"submission_id": best_id, "rule": "best" if best else "none"},
            "dev": {"best": score, "selected": score, "selected_se": se, "n": baseline.get("n")},
            **_headline(score, se, baseline["score"], baseline_se),
        }
    test_path = scorer.setup.prepared.test_path
    if test_path is None:
        raise SealedScoringError("the run has no sealed test split (task-data/sealed)")
    sid = selection.get("submission_id")
    dev = _dev_result(scored[sid], baseline) if sid in scored else None
    dev_se = score_se(dev) if dev else None
    note("sealed_evaluation_started", selected=sid, rule=selection.get("rule"))
    base_result = functools.cache(scorer.test_baseline)  # once, and only when needed
    try:
        # the selected checkpoint first: its dev evaluation just handed its engine back, idle
        # (autorl_hf.engine.pool), so it runs without an engine start; the base's comes last
        results: dict[int, dict[str, Any]] = {}
        wanted = [sid] if sid is not None else []
        if test_all:
            wanted += [s for s in sorted(scored) if s != sid]
        for one in wanted:
            results[one] = _sealed_one(scorer, one, scored.get(one, {}), selection, base_result)
        test_base = base_result()
    except SealedScoringError:
        raise
    except Exception as exc:
        raise SealedScoringError(
            f"the sealed evaluation failed: {type(exc).__name__}: {str(exc)[:300]}"
        ) from exc
    test_base_se = score_se(test_base)
    selected = results.get(sid) if sid is not None else None
    score = float(selected["score"]) if selected else None
    se = score_se(selected) if selected else None
    test: dict[str, Any] = {
        "selected": score,
        "selected_se": se,
        "n": test_base.get("n"),
        "baseline": test_base["score"],
        "baseline_se": test_base_se,
    }
    block: dict[str, Any] = {
        "protocol": "sealed",
        "selection": {"submission_id": sid, "rule": selection.get("rule", "none")},
        "dev": {
            "best": selection.get("best_dev"),
            "selected": float(dev["score"]) if dev else None,
            "selected_se": dev_se,
            "n": baseline.get("n"),
        },
        "test": test,
        **_headline(score, se, test_base["score"], test_base_se),
        "selection_gap": _diff(float(dev["score"]), score) if dev and score is not None else None,
        "selection_gap_se": _sum_se(dev_se, se) if dev and score is not None else None,
    }
    if test_all:
        test["all"] = [
            {"submission_id": s, "score": float(r["score"]), "se": score_se(r)}
            for s, r in sorted(results.items())
        ]
        best_test = max((float(r["score"]) for r in results.values()), default=None)
        block["oracle_gap"] = _diff(best_test, score)
    note("sealed_evaluation_done", selected=sid, score=score, baseline=test_base["score"])
    return block


def _sealed_one(
    scorer: Scorer,
    sid: int,
    entry: dict[str, Any],
    selection: dict[str, Any],
    test_base: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """One scored submission on the sealed split: a copy of the base is the baseline's test
    result (``test_base()``); any other is evaluated from its kept graded directory."""
    if entry.get("copy_of_base") or (
        sid == selection.get("submission_id") and selection.get("copy_of_base")
    ):
        return test_base()
    kept = (selection.get("scored") or {}).get(sid)
    if sid == selection.get("submission_id") and selection.get("graded_dir"):
        kept = selection["graded_dir"]
    graded = Path(kept) if kept else scorer.run_dir / "submissions" / str(sid) / "graded"
    if not graded.is_dir():
        raise SealedScoringError(
            f"submission {sid}'s graded checkpoint is gone ({graded}): it cannot be scored on "
            "the sealed split"
        )
    return scorer.sealed(sid, graded, _test_deadline(scorer))
