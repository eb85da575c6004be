"""A run's evaluations as the grader runs them, each a ``Generator`` closed after it: the base
on dev, two checkpoints on dev as they are submitted, the selected one (the second) and the
base on the sealed test split. Three ways, ratios in one run: transformers (load + generate),
the vLLM CPU engine stopped after each evaluation (start + generate: before engine.pool), and
the engine handed back (one start, then the same weights taken as they are and a checkpoint's
weights loaded into the running engine: now).

Why: each engine start took 33-70 s on the hosts measured, more than a small evaluation's
generation, so the engine lost to transformers end to end. The checkpoints are the base's
frame around other weights (every tensor moved by 3 % noise), as the grader assembles a full
fine-tune's; their outputs differ from the base's.

    .venv/bin/python bench/engine_reuse.py                 # SmolLM2, 16 prompts a split, 48 tokens
    .venv/bin/python bench/engine_reuse.py --json out.json

Needs the engine environment (``autorl engine prepare``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from autorl_testing.checkpoints import moved_checkpoint
from benchlib import bench_parser, parse_bench_args, report
from engine_eval import cpu, engine_model
from eval_throughput import questions


def evaluations(plan: list[tuple[str, Path, list[Any]]], backend: str, tokens: int) -> dict:
    """One Generator per evaluation, closed after it, as every evaluator does."""
    from autorl_hf.generation import Generator

    seconds, texts = {}, {}
    for name, path, prompts in plan:
        started = time.perf_counter()
        generator = Generator(path, device="cpu", backend=backend)
        out = generator.completions(prompts, max_new_tokens=tokens, batch_size=len(prompts))
        generator.close()
        seconds[name] = round(time.perf_counter() - started, 1)
        texts[name] = [c.text for c in out]
    return {"evaluations_s": seconds, "total_s": round(sum(seconds.values()), 1), "texts": texts}


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, "smollm2-135m")
    parser.add_argument("--prompts", type=int, default=16, help="per split")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parse_bench_args(parser, argv)
    base = engine_model("engine_reuse", args.model)
    if base is None:
        return 2
    from autorl_hf.engine import pool

    both = questions(2 * args.prompts, args.seed)
    dev, test = both[: args.prompts], both[args.prompts :]
    scratch = Path(tempfile.mkdtemp(prefix="engine-reuse-"))
    try:
        v1 = moved_checkpoint(base, scratch / "v1", seed=1)
        v2 = moved_checkpoint(base, scratch / "v2", seed=2)
        plan = [
            ("base_dev", base, dev),
            ("v1_dev", v1, dev),
            ("v2_dev", v2, dev),
            ("v2_test", v2, test),
            ("base_test", base, test),
        ]
        result: dict[str, Any] = {
            "model": args.model,
            "prompts_per_split": args.prompts,
            "max_new_tokens": args.max_new_tokens,
            "cpu": cpu(),
            "load_before": os.getloadavg()[0],
        }
        os.environ["AUTORL_ENGINE_PRECISION"] = "fp32"
        runs = {"transformers": evaluations(plan, "transformers", args.max_new_tokens)}
        os.environ[pool.IDLE_ENV] = "0"  # before: an engine per evaluation
        runs["vllm_stopped_each_time"] = evaluations(plan, "vllm-cpu", args.max_new_tokens)
        os.environ[pool.IDLE_ENV] = "300"  # now: one engine, weights loaded into it
        runs["vllm_one_engine"] = evaluations(plan, "vllm-cpu", args.max_new_tokens)
        pool.close_idle()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    want = runs["transformers"].pop("texts")
    for kind in ("vllm_stopped_each_time", "vllm_one_engine"):
        texts = runs[kind].pop("texts")
        runs[kind]["same_outputs_as_transformers"] = {
            name: sum(a == b for a, b in zip(texts[name], want[name], strict=True)) for name in want
        }
        runs[kind]["speedup_vs_transformers"] = round(
            runs["transformers"]["total_s"] / runs[kind]["total_s"], 2
        )
    result.update(runs)
    result["checkpoints_differ_from_base"] = sum(
        a != b for a, b in zip(want["base_dev"], want["v1_dev"], strict=True)
    )
    result["one_engine_vs_stopped"] = round(
        runs["vllm_stopped_each_time"]["total_s"] / runs["vllm_one_engine"]["total_s"], 2
    )
    result["load_after"] = os.getloadavg()[0]
    report(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
