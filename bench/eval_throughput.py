"""Batched vs one-prompt-at-a-time generation throughput, same prompts, same model, one run.

Why: every evaluation in autorl goes through ``autorl_hf.generation.generate``; this measures
what batching buys on the current machine (target: >= 8x on CPU for smollm2-135m).

    .venv/bin/python bench/eval_throughput.py                       # tiny model
    .venv/bin/python bench/eval_throughput.py --model smollm2-135m  # converted once into the cache

The model comes from the registry (``autorl list model``), materialised into
``$AUTORL_CACHE/models`` (default ``~/.cache/autorl/models``). Prompts: GSM8K-style questions
from reasoning-gym's ``gsm_symbolic`` in chat format, greedy, ``--max-new-tokens`` each.
"""

from __future__ import annotations

import json
import time
from typing import Any

from benchlib import bench_parser, parse_model_args


def questions(n: int, seed: int, kind: str = "gsm") -> list[list[dict[str, str]]]:
    """``gsm``: long GSM8K-style questions (prefill-heavy); ``add``: short "What is a + b?"."""
    if kind == "add":
        import random

        rng = random.Random(seed)
        pairs = [(rng.randint(0, 99), rng.randint(0, 99)) for _ in range(n)]
        return [[{"role": "user", "content": f"What is {a} + {b}?"}] for a, b in pairs]
    import reasoning_gym

    data = reasoning_gym.create_dataset("gsm_symbolic", size=n, seed=seed)
    return [[{"role": "user", "content": item["question"]}] for item in data]


def timed(fn: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, "tiny")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument(
        "--questions", choices=("gsm", "add"), default="gsm", help="long GSM8K-style or short"
    )
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="auto")
    args, model_path = parse_model_args(parser, argv)
    if model_path is None:
        return 2

    import torch
    from autorl_hf.generation import encode, generate_completions
    from autorl_hf.loading import load_model

    (model, tokenizer), load_s = timed(lambda: load_model(model_path, device=args.device))
    prompts = questions(args.prompts, args.seed, args.questions)
    options = {"max_new_tokens": args.max_new_tokens}
    generate_completions(model, tokenizer, prompts[:2], max_new_tokens=4)  # warm-up
    batched, batched_s = timed(
        lambda: generate_completions(
            model, tokenizer, prompts, batch_size=args.batch_size, **options
        )
    )
    single, single_s = timed(
        lambda: generate_completions(model, tokenizer, prompts, batch_size=1, **options)
    )
    device = str(next(model.parameters()).device)
    result: dict[str, Any] = {
        "model": args.model,
        "path": str(model_path),
        "device": device,
        "threads": torch.get_num_threads(),
        "prompts": len(prompts),
        "questions": args.questions,
        "prompt_tokens_mean": round(
            sum(len(encode(tokenizer, p)) for p in prompts) / max(1, len(prompts)), 1
        ),
        "max_new_tokens": args.max_new_tokens,
        "batch_size": args.batch_size,
        "load_seconds": round(load_s, 2),
    }
    for label, completions, seconds in (
        ("batched", batched, batched_s),
        ("one_by_one", single, single_s),
    ):
        tokens = sum(c.tokens for c in completions)
        result[label] = {
            "seconds": round(seconds, 2),
            "tokens": tokens,
            "tokens_per_s": round(tokens / seconds, 1),
            "prompts_per_s": round(len(prompts) / seconds, 2),
        }
    result["speedup_wall"] = round(single_s / batched_s, 2)
    result["speedup_tokens_per_s"] = round(
        result["batched"]["tokens_per_s"] / result["one_by_one"]["tokens_per_s"], 2
    )
    same = sum(a.text == b.text for a, b in zip(batched, single, strict=True))
    result["identical_outputs"] = f"{same}/{len(prompts)}"

    print(
        f"model {args.model} on {device} ({result['threads']} threads), {len(prompts)} "
        f"{args.questions} prompts ({result['prompt_tokens_mean']} tokens on average), "
        f"{args.max_new_tokens} new tokens, greedy"
    )
    for label in ("batched", "one_by_one"):
        r = result[label]
        print(
            f"  {label:<11} {r['seconds']:8.2f} s  {r['tokens']:6d} tokens  "
            f"{r['tokens_per_s']:8.1f} tok/s  {r['prompts_per_s']:6.2f} prompts/s"
        )
    print(
        f"  speedup     {result['speedup_wall']:.2f}x wall time, "
        f"{result['speedup_tokens_per_s']:.2f}x tokens/s; identical outputs "
        f"{result['identical_outputs']}"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
