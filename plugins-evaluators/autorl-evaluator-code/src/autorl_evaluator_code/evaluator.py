"""The ``code`` evaluator: generate completions, execute them against the tests, pass@k.

It consumes the ``code`` contract (:class:`autorl_evaluator_code.contract.CodeContract`): the task's
``build_prompt(problem)`` and ``extract_code(completion, problem)``, and optionally
``STOP_SEQUENCES``; the engine loads the task's implementation from the installed package
(never the agent's workspace) into ``EvalRequest.contract``. Rows: ``task_id``, ``prompt``,
``test``, ``entry_point``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autorl_data.jsonl import read_jsonl
from pydantic import Field, PositiveFloat, model_validator

from autorl.options import OptionsModel, PositiveInt, parse_options
from autorl.types import EvalRequest, EvalResult
from autorl_evaluator_code.contract import CODE
from autorl_evaluator_code.execution import build_program, run_programs
from autorl_evaluator_code.passk import mean_pass_at_k
from autorl_evaluator_code.sandbox import Limits


class Options(OptionsModel):
    """``[evaluator_options]`` of the code evaluator."""

    max_new_tokens: PositiveInt = Field(384, description="generated tokens per sample")
    batch_size: PositiveInt = Field(16, description="prompts generated together")
    temperature: float = Field(0.0, ge=0, description="0: greedy")
    n: PositiveInt = Field(1, description="samples per problem (n > 1 needs temperature > 0)")
    k: list[PositiveInt] = Field([1, 10, 100], description="pass@k for each k <= n")
    timeout_s: PositiveFloat = Field(10.0, description="seconds a program may run")
    memory_mb: PositiveInt = Field(1024, description="memory of a program")
    workers: PositiveInt | None = Field(None, description="parallel sandboxes (None: CPUs)")
    isolate_network: bool = Field(True, description="programs get no network")
    device: str = Field("auto", description="auto, cpu or cuda")
    limit: PositiveInt | None = Field(None, description="first N problems only")

    @model_validator(mode="after")
    def _samples_need_sampling(self) -> Options:
        if self.n > 1 and self.temperature <= 0:
            raise ValueError(
                f"n={self.n} samples per problem with temperature 0 would be identical copies "
                "of the greedy output: set temperature (e.g. 0.8) with n > 1"
            )
        return self


PROBLEM_FIELDS = ("task_id", "prompt", "test", "entry_point")


def settings(config: Mapping[str, Any] | None) -> Options:
    return parse_options(Options, config, who="evaluator 'code'")


def read_problems(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Eval problems; errors name the file, the line and the missing fields."""
    return read_jsonl(
        path,
        required=PROBLEM_FIELDS,
        what="problem",
        valid=lambda value: isinstance(value, str),
        limit=limit,
    )


def score_programs(
    problems: list[dict[str, Any]],
    completions: list[list[str]],
    protocol: Any,
    cfg: Options,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Execute every sample; per-problem records and the pass@k metrics."""
    flat = [(i, c) for i, samples in enumerate(completions) for c in samples]
    programs = []
    for i, completion in flat:
        problem = problems[i]
        code = protocol.extract_code(completion, problem)
        programs.append(build_program(code, problem["test"], problem["entry_point"]))
    limits = Limits(timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb)
    outcomes = run_programs(
        programs, limits, workers=cfg.workers, isolate_network=cfg.isolate_network
    )
    records: list[dict[str, Any]] = [{"task_id": p["task_id"], "samples": []} for p in problems]
    for (i, completion), outcome in zip(flat, outcomes, strict=True):
        records[i]["samples"].append(
            {
                "completion": completion,
                "status": outcome.status,
                "detail": outcome.detail,
                "seconds": round(outcome.seconds, 3),
            }
        )
    counts = []
    for record in records:
        c = sum(s["status"] == "passed" for s in record["samples"])
        record["n"], record["passed"] = len(record["samples"]), c
        counts.append((record["n"], c))
    n = cfg.n
    metrics: dict[str, Any] = {
        f"pass@{k}": round(mean_pass_at_k(counts, k), 6) for k in sorted({1, *cfg.k}) if k <= n
    }
    statuses = [o.status for o in outcomes]
    metrics.update(
        samples=len(outcomes),
        timeouts=statuses.count("timeout"),
        sandbox=_common_flags([o.flags for o in outcomes]),
    )
    return records, metrics


def _common_flags(all_flags: list[dict[str, bool]]) -> dict[str, bool]:
    """A protection counts as applied only if it held for every sample."""
    keys = sorted({k for flags in all_flags for k in flags})
    return {k: all(flags.get(k, False) for flags in all_flags) for k in keys}


class CodeEvaluator:
    """pass@1 (percent) of generated code on the eval problems; pass@k when ``n > 1``."""

    Options = Options
    """Its options model: a campaign checks them before any run starts."""

    name = "code"

    def check_config(self, config: Mapping[str, Any], contract: Any = None) -> None:
        """Refuse bad options before any work (the engine and TaskConformance call it)."""
        settings(dict(config))

    def evaluate(self, request: EvalRequest) -> EvalResult:
        from autorl_hf.generation import Generator

        cfg = settings(dict(request.config))
        protocol = CODE.of(request, self.name)
        problems = read_problems(request.eval_path, cfg.limit)
        n = cfg.n
        prompts = [protocol.build_prompt(p) for p in problems for _ in range(n)]

        started = time.monotonic()
        generator = Generator(request.model_dir, device=cfg.device, base_dir=request.base_model_dir)
        loaded = time.monotonic()
        outputs = generator.completions(
            prompts,
            max_new_tokens=cfg.max_new_tokens,
            batch_size=cfg.batch_size,
            temperature=cfg.temperature,
            stop=tuple(getattr(protocol, "STOP_SEQUENCES", ())),
            seed=request.seed,
            progress=request.progress,
        )
        generated = time.monotonic()
        engine = generator.engine  # name, version, precision (and why auto fell back)
        generator.close()  # the engine is handed back now, idle for the same weights (engine.pool)
        texts = [o.text for o in outputs]
        completions = [texts[i * n : (i + 1) * n] for i in range(len(problems))]
        records, metrics = score_programs(problems, completions, protocol, cfg)
        executed = time.monotonic()

        work_dir = Path(request.work_dir)
        work_dir.mkdir(parents=True, exist_ok=True)
        details_path = work_dir / "details.jsonl"
        with details_path.open("w", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        p1 = float(metrics["pass@1"])
        metrics.update(
            problems=len(problems),
            n=n,
            # binomial over problems: exact for one sample each, an upper bound with several
            score_se=round(100.0 * math.sqrt(p1 * (1 - p1) / len(problems)), 2)
            if problems
            else 0.0,
            truncated_rate=round(sum(o.finish == "length" for o in outputs) / len(outputs), 4),
            backend=generator.backend,
            engine=engine,
            load_seconds=round(loaded - started, 2),
            generate_seconds=round(generated - loaded, 2),
            execute_seconds=round(executed - generated, 2),
        )
        return EvalResult(
            score=100.0 * metrics["pass@1"],
            n=len(problems),
            metrics=metrics,
            details_path=details_path,
        )
