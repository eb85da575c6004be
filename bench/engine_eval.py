"""Evaluation generation on a CPU: transformers fp32 (batched, today's path) vs the vLLM CPU
engine in fp32 and in bf16, same chat prompts, greedy, as ratios in one run.

Why: issue #33 makes vLLM CPU the evaluation engine where it is faster; this measures what it
buys here, what starting it costs (an engine process per evaluation today), and whether its
outputs equal the transformers path's (fp32: they should, all of them).

    .venv/bin/python bench/engine_eval.py                      # SmolLM2, 32 prompts, 64 tokens
    .venv/bin/python bench/engine_eval.py --rounds 2 --json out.json

Needs the engine environment (``autorl engine prepare``). bf16 runs only when the CPU has bf16
units (``avx512_bf16`` or ``amx_bf16`` in /proc/cpuinfo). Rounds alternate the backends, all
loaded at once, so a change in the machine's load hits each alike; the load average is printed.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from benchlib import bench_parser, parse_bench_args, registry_model, report
from eval_throughput import questions


def cpu() -> dict[str, Any]:
    model = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        found = re.search(r"Model name:\s*(.+)", out)
        model = found.group(1).strip() if found else ""
    except OSError:
        pass
    flags = (
        set(Path("/proc/cpuinfo").read_text().split()) if Path("/proc/cpuinfo").exists() else set()
    )
    return {
        "model": model or platform.processor(),
        "cores": os.cpu_count(),
        "bf16_units": sorted(flags & {"avx512_bf16", "amx_bf16"}),
    }


def engine_model(prog: str, model: str) -> Path | None:
    """The model's directory for an engine bench; None, after saying why, when the engine is
    not built or the model cannot be had."""
    from autorl_hf.engine.env import find_engine

    if find_engine() is None:
        print(f"{prog}: the vLLM CPU engine is not built (autorl engine prepare); not run")
        return None
    return registry_model(model)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, "smollm2-135m")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=1, help="alternating repetitions")
    parser.add_argument("--no-bf16", action="store_true", help="skip vLLM bf16")
    args = parse_bench_args(parser, argv)
    path = engine_model("engine_eval", args.model)
    if path is None:
        return 2
    from autorl_hf.generation import Generator

    info = cpu()
    result: dict[str, Any] = {
        "model": args.model,
        "prompts": args.prompts,
        "max_new_tokens": args.max_new_tokens,
        "cpu": info,
        "load_before": os.getloadavg()[0],
    }
    prompts = questions(args.prompts, args.seed)
    kinds = ["transformers", "vllm-fp32"]
    if info["bf16_units"] and not args.no_bf16:
        kinds.append("vllm-bf16")
    generators: dict[str, Any] = {}
    for kind in kinds:
        started = time.perf_counter()
        if kind == "transformers":
            generators[kind] = Generator(path, device="cpu", backend="transformers")
        else:
            os.environ["AUTORL_ENGINE_PRECISION"] = kind.split("-")[1]
            generators[kind] = Generator(path, device="cpu", backend="vllm-cpu")
        result[kind] = {"start_s": round(time.perf_counter() - started, 1), "generate_s": []}
        print(f"{kind}: ready in {result[kind]['start_s']} s", flush=True)
    outputs: dict[str, Any] = {}
    try:
        for _round in range(args.rounds):
            for kind in kinds:
                engine = getattr(generators[kind], "_engine", None)
                if engine is not None:  # a round generates; it does not read the last one's cache
                    engine.server.reset_prefix_cache()
                started = time.perf_counter()
                done = generators[kind].completions(
                    prompts, max_new_tokens=args.max_new_tokens, batch_size=len(prompts)
                )
                seconds = time.perf_counter() - started
                result[kind]["generate_s"].append(round(seconds, 2))
                outputs[kind] = done
                print(f"{kind}: {seconds:.1f} s", flush=True)
    finally:
        for generator in generators.values():
            generator.close()
    base = outputs["transformers"]
    for kind in kinds:
        best = min(result[kind]["generate_s"])
        result[kind]["best_s"] = best
        result[kind]["tokens"] = sum(c.tokens for c in outputs[kind])
        result[kind]["engine"] = generators[kind].engine
        same = sum(a.text == b.text for a, b in zip(outputs[kind], base, strict=True))
        result[kind]["identical_to_transformers"] = f"{same}/{len(prompts)}"
        result[kind]["speedup_vs_transformers"] = round(result["transformers"]["best_s"] / best, 2)
        # one evaluation as the grader runs it today: start (load or engine) + generate
        result[kind]["start_plus_generate_s"] = round(result[kind]["start_s"] + best, 1)
    result["load_after"] = os.getloadavg()[0]
    report(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
