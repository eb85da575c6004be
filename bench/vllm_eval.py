"""Evaluation generation on a GPU: autorl's vLLM backend vs its transformers backend on the same
checkpoint and prompts, and vs a raw ``vllm.LLM.generate`` over the same token ids (the limit),
as ratios in one run.

Why: the reference evaluates on vLLM; ``autorl_hf.generation.Generator`` picks vLLM on a CUDA GPU
when it is installed. This says what that buys over transformers and what the wrapper costs
over vLLM itself.

    .venv/bin/python bench/vllm_eval.py --model smollm2-135m           # a registry model
    .venv/bin/python bench/vllm_eval.py --model /path/to/Qwen2.5-0.5B-Instruct

Needs a CUDA GPU and ``pip install vllm``; elsewhere it says so and exits 2 (it has not run in
this project yet: the one GPU machine lent had no vLLM and no network; docs/reference.md).
"""

from __future__ import annotations

import importlib.util
import time
from typing import Any

from benchlib import bench_parser, parse_bench_args, registry_model, report
from eval_throughput import questions


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, "smollm2-135m")
    parser.add_argument("--prompts", type=int, default=256)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=64, help="transformers batch")
    args = parse_bench_args(parser, argv)

    import torch

    if not torch.cuda.is_available() or importlib.util.find_spec("vllm") is None:
        print("vllm_eval: needs a CUDA GPU and vllm installed (pip install vllm); not run here")
        return 2
    path = registry_model(args.model)
    if path is None:
        return 2
    from autorl_hf.generation import Generator, encode

    prompts = questions(args.prompts, args.seed)
    result: dict[str, Any] = {"model": args.model, "prompts": len(prompts)}
    outputs = {}
    for backend in ("vllm", "transformers"):
        generator = Generator(path, device="cuda", backend=backend)
        generator.completions(prompts[:2], max_new_tokens=4, batch_size=2)  # warm-up
        started = time.perf_counter()
        done = generator.completions(
            prompts, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size
        )
        seconds = time.perf_counter() - started
        outputs[backend] = done
        tokens = sum(c.tokens for c in done)
        result[backend] = {"seconds": round(seconds, 2), "tokens_per_s": round(tokens / seconds)}
        if backend == "vllm":
            engine = generator._engine
            ids = [{"prompt_token_ids": encode(engine.tokenizer, p)} for p in prompts]
            from vllm import SamplingParams

            params = SamplingParams(max_tokens=args.max_new_tokens, temperature=0.0)
            started = time.perf_counter()
            raw = engine.llm.generate(ids, params, use_tqdm=False)
            raw_s = time.perf_counter() - started
            raw_tokens = sum(len(r.outputs[0].token_ids) for r in raw)
            result["raw_vllm"] = {
                "seconds": round(raw_s, 2),
                "tokens_per_s": round(raw_tokens / raw_s),
            }
            del generator, engine
            torch.cuda.empty_cache()
    result["vllm_over_transformers"] = round(
        result["transformers"]["seconds"] / result["vllm"]["seconds"], 2
    )
    result["wrapper_over_raw_vllm"] = round(
        result["vllm"]["seconds"] / result["raw_vllm"]["seconds"], 2
    )
    same = sum(
        a.text == b.text for a, b in zip(outputs["vllm"], outputs["transformers"], strict=True)
    )
    result["identical_outputs"] = f"{same}/{len(prompts)}"
    report(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
