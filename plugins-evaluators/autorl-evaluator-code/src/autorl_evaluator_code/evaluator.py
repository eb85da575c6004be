"""The ``code`` evaluator: generate completions, execute them against the tests, pass@k.

The prompt and the code extraction come from a *protocol module* named by the task in
``evaluator_config["protocol"]`` (default ``autorl_task_humaneval.kit``), imported from the
installed package, never from the agent's workspace. It provides ``build_prompt(problem)``,
``extract_code(completion, problem)`` and ``STOP_SEQUENCES``.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from autorl.datafiles import read_jsonl
from autorl.errors import ConfigError
from autorl.types import EvalRequest, EvalResult
from autorl_evaluator_code.execution import build_program, run_programs
from autorl_evaluator_code.passk import mean_pass_at_k
from autorl_evaluator_code.sandbox import Limits

DEFAULTS: dict[str, Any] = {
    "protocol": "autorl_task_humaneval.kit",
    "max_new_tokens": 384,
    "batch_size": 16,
    "temperature": 0.0,
    "n": 1,
    "k": [1, 10, 100],
    "timeout_s": 10.0,
    "memory_mb": 1024,
    "workers": None,
    "isolate_network": True,
    "device": "auto",
    "limit": None,
}
"""``n`` samples per problem (``n > 1`` needs ``temperature > 0``); pass@k for each ``k <= n``;
``workers``: parallel sandboxes (None = CPU count); ``limit``: first N problems only."""
PROBLEM_FIELDS = ("task_id", "prompt", "test", "entry_point")


def settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults overlaid with ``config``; unknown keys and bad values are errors."""
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ConfigError(
            f"evaluator 'code': unknown option(s) {', '.join(map(repr, unknown))}",
            hint=f"known options: {', '.join(DEFAULTS)}",
        )
    merged = {**DEFAULTS, **config}
    for key in ("max_new_tokens", "batch_size", "n", "memory_mb"):
        value = merged[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"evaluator 'code': {key}={value!r} must be a positive integer")
    if not isinstance(merged["timeout_s"], int | float) or merged["timeout_s"] <= 0:
        raise ConfigError(f"evaluator 'code': timeout_s={merged['timeout_s']!r} must be > 0")
    if merged["n"] > 1 and float(merged["temperature"]) <= 0:
        raise ConfigError(
            f"evaluator 'code': n={merged['n']} samples per problem with temperature 0 would be "
            "identical copies of the greedy output",
            hint="set temperature (e.g. 0.8) with n > 1, or n = 1 for greedy pass@1",
        )
    return merged


def load_protocol(name: str) -> ModuleType:
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(
            f"evaluator 'code': cannot import protocol module {name!r} ({exc})",
            hint="install the task package that provides it (pip install autorl-task-humaneval) "
            "or fix evaluator_config['protocol']",
        ) from None
    missing = [f for f in ("build_prompt", "extract_code") if not callable(getattr(module, f, 0))]
    if missing:
        raise ConfigError(f"evaluator 'code': protocol {name!r} lacks {', '.join(missing)}")
    return module


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
    protocol: ModuleType,
    cfg: Mapping[str, Any],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Execute every sample; per-problem records and the pass@k metrics."""
    flat = [(i, c) for i, samples in enumerate(completions) for c in samples]
    programs = []
    for i, completion in flat:
        problem = problems[i]
        code = protocol.extract_code(completion, problem)
        programs.append(build_program(code, problem["test"], problem["entry_point"]))
    limits = Limits(timeout_s=float(cfg["timeout_s"]), memory_mb=int(cfg["memory_mb"]))
    outcomes = run_programs(
        programs, limits, workers=cfg["workers"], isolate_network=bool(cfg["isolate_network"])
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
    n = int(cfg["n"])
    metrics: dict[str, Any] = {
        f"pass@{k}": round(mean_pass_at_k(counts, k), 6) for k in sorted({1, *cfg["k"]}) if k <= n
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

    name = "code"

    def evaluate(self, request: EvalRequest) -> EvalResult:
        from autorl_hf.generation import Generator

        cfg = settings(request.config)
        protocol = load_protocol(cfg["protocol"])
        problems = read_problems(request.eval_path, cfg["limit"])
        n = int(cfg["n"])
        prompts = [protocol.build_prompt(p) for p in problems for _ in range(n)]

        started = time.monotonic()
        generator = Generator(request.model_dir, device=cfg["device"])
        loaded = time.monotonic()
        outputs = generator.completions(
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            batch_size=cfg["batch_size"],
            temperature=float(cfg["temperature"]),
            stop=tuple(getattr(protocol, "STOP_SEQUENCES", ())),
            seed=request.seed,
            progress=request.progress,
        )
        generated = time.monotonic()
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
        metrics.update(
            problems=len(problems),
            n=n,
            truncated_rate=round(sum(o.finish == "length" for o in outputs) / len(outputs), 4),
            backend=generator.backend,
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
