"""An SFT step on action tokens: full backpropagation vs the prompt run without gradient.

Why: the interactive recipe's SFT trains on turns of ~280 prompt tokens for ~10 action tokens.
Backpropagating through the whole prompt (what TRL's SFTTrainer and a plain loss over the
sequence do) spends most of the step on positions whose loss is masked out. The recipe runs
the prompt without gradient instead (``interactive.action_logprobs(..., detach_prompt=True)``:
the prefix every prompt of the batch shares once, then each prompt's rest, then the action with
gradient over the cached keys and values). This times both on the same batches of real WebShop
expert turns, with the same model and LoRA adapters, alternating the two, in one run.

    .venv/bin/python bench/action_sft_step.py                       # smollm2-135m, 6 batches
    .venv/bin/python bench/action_sft_step.py --model tiny --batches 4 --batch-size 8

The turns are the kit expert's on the prepared WebShop task (offline catalogue, the grader's
compact prompt); the model comes from the registry, materialised into ``$AUTORL_CACHE/models``.
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import bench_parser, parse_model_args, report_medians

RECIPES = Path(__file__).resolve().parents[1] / (
    "plugins-agents/autorl-agent-scripted/src/autorl_agent_scripted/recipes"
)


def expert_pairs(tokenizer: Any, n: int, seed: int) -> list[tuple[list[int], list[int]]]:
    """``n`` (prompt ids, action ids) turns of the WebShop kit expert, shuffled."""
    import random

    from autorl_task_webshop.task import WebShopTask

    from autorl.types import TaskContext

    tmp = Path(tempfile.mkdtemp(prefix="sft-bench-"))
    atexit.register(shutil.rmtree, tmp, True)  # the kit is imported from it until the end
    kit_dir = WebShopTask().prepare(TaskContext(cache_dir=tmp, options={})).kit_dir
    sys.path[:0] = [str(kit_dir), str(RECIPES / "common")]
    import autorl_kit as kit
    import interactive

    ids = kit.train_ids()
    random.Random(seed).shuffle(ids)
    rows, _ = interactive.expert_rows(kit, ids[: n // 3 + 8])
    random.Random(seed + 1).shuffle(rows)
    return interactive.tokenize_rows(tokenizer, rows[:n], 768)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, "smollm2-135m")
    parser.add_argument("--batches", type=int, default=6, help="timed batches per mode (6)")
    parser.add_argument("--batch-size", type=int, default=4, help="turns per step (4)")
    args, model_path = parse_model_args(parser, argv)
    if model_path is None:
        return 2

    import torch
    from autorl_hf.loading import load_model

    model, tokenizer = load_model(model_path, device="cpu")
    pairs = expert_pairs(tokenizer, args.batches * args.batch_size, args.seed)
    import interactive

    model = interactive.with_adapter(model, argparse.Namespace(mode="lora", lora_r=16))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    size = args.batch_size
    batches = [pairs[i : i + size] for i in range(0, len(pairs) - size + 1, size)]
    times: dict[str, list[float]] = {"full backprop": [], "prompt without gradient": []}
    interactive.weighted_step(model, optimizer, [(*p, 1.0) for p in batches[0]], size)  # warm-up
    for batch in batches:
        samples = [(*p, 1.0) for p in batch]
        for name, detach in (("full backprop", False), ("prompt without gradient", True)):
            started = time.perf_counter()
            interactive.weighted_step(model, optimizer, samples, size, detach_prompt=detach)
            times[name].append(time.perf_counter() - started)
    prompt_tokens = statistics.fmean(len(p) for p, _ in pairs)
    action_tokens = statistics.fmean(len(a) for _, a in pairs)
    print(
        f"model {args.model}, LoRA r 16, {len(batches)} batches of {size} WebShop expert turns "
        f"(prompt {prompt_tokens:.0f} tokens, action {action_tokens:.1f} on average)"
    )
    ratio = report_medians(times, "full backprop", "prompt without gradient", args.json)
    print(f"prompt without gradient vs full backprop: {ratio:.1f}x faster a step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
