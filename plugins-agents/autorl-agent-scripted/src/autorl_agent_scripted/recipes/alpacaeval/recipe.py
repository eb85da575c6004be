"""Scripted reference recipe for AlpacaEval: SFT (LoRA by default) on the train answers, in rounds.

Run by the ``scripted`` agent as ``python code/recipe.py`` inside the workspace. It uses only
the workspace (``kit/autorl_kit.py``, ``data/``, ``models/base``, ``output/``) and the grading
API. Each round: SFT with TRL's ``SFTTrainer`` in the eval's chat format (prompt =
``build_messages(instruction, input)``, completion = the train answer; loss on the completion
only), merge the adapter, save ``output/vN``, submit, and go on training while the grader judges.
There is no RL phase: the reward is an LLM judge the agent cannot call, and supervised routes
are what moved this task in the reference study. Rounds are sized to the budget from
``GET /budget``; training stops at a deadline with a safety margin.

    python code/recipe.py [--mode lora|full] [--rounds N] [--batch-size 4] [--lr 2e-4] ...
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recipe_common import (
    Clock,
    GraderClient,
    Submissions,
    device,
    load_base,
    log,
    merged,
    save_checkpoint,
    stop_at_callback,
    workspace,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("lora", "full"), default=env("RECIPE_MODE", "lora"))
    p.add_argument(
        "--rounds",
        type=int,
        default=int(env("RECIPE_ROUNDS", "2")),
        help="at most this many SFT rounds, one submission each (fewer when time is short)",
    )
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--lr", type=float, default=None, help="default 2e-4 LoRA, 2e-5 full")
    p.add_argument("--epochs", type=float, default=1.0, help="cap per round")
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--lora-r", type=int, default=16)
    p.add_argument(
        "--margin",
        type=float,
        default=0.08,
        help="share of the budget kept free at the end (at least --min-margin s)",
    )
    p.add_argument("--min-margin", type=float, default=8.0)
    p.add_argument("--seed", type=int, default=int(env("AUTORL_SEED", "0") or 0))
    return p.parse_args(argv)


def sft_rows(kit: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Conversational prompt-completion rows in the eval's prompt format."""
    return [
        {
            "prompt": kit.build_messages(r["instruction"], r.get("input") or ""),
            "completion": [{"role": "assistant", "content": r["output"].strip()}],
        }
        for r in rows
        if str(r.get("output") or "").strip()
    ]


def lora_config(r: int) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )


def run_sft(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    *,
    mode: str,
    seconds: float,
    scratch: Path,
    batch_size: int,
    lr: float | None,
    epochs: float,
    max_length: int,
    lora_r: int,
    seed: int,
) -> tuple[Any, int]:
    """SFT until ``seconds`` pass or ``epochs`` are done; returns (merged model, steps run)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    on_gpu = device() == "cuda"
    tokenizer.padding_side = "right"
    max_steps = max(1, int(len(rows) * epochs / batch_size))
    config = SFTConfig(
        output_dir=str(scratch),
        save_strategy="no",
        report_to="none",
        logging_steps=1,
        disable_tqdm=True,
        seed=seed,
        bf16=on_gpu,
        use_cpu=not on_gpu,
        dataloader_num_workers=0,
        per_device_train_batch_size=batch_size,
        learning_rate=lr or (2e-4 if mode == "lora" else 2e-5),
        lr_scheduler_type="constant",  # short phases on a budget: every step at full rate
        max_steps=max_steps,
        max_length=max_length,
        completion_only_loss=True,
    )
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora_config(lora_r) if mode == "lora" else None,
        callbacks=[stop_at_callback(time.monotonic() + seconds, "sft")],
    )
    trainer.train()
    return merged(trainer.model), trainer.state.global_step


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = workspace()
    import autorl_kit as kit  # on PYTHONPATH (workspace/kit)

    client = GraderClient.from_env()
    budget = client.budget()
    clock = Clock.from_budget(budget, args.margin, args.min_margin)
    subs = Submissions(
        client, int(budget.get("max_submissions") or 1) - int(budget.get("submissions_used") or 0)
    )
    log(
        f"budget {budget.get('remaining_s'):.0f}s left, {subs.left()} submissions; working "
        f"until {clock.left():.0f}s from now; mode {args.mode}, device {device()}"
    )
    rows = sft_rows(kit, kit.load_train())
    random.Random(args.seed).shuffle(rows)
    log(f"{len(rows)} train examples")
    model, tokenizer = load_base(root / "models" / "base")
    log(f"loaded base model ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params)")
    save_reserve = 5.0 + sum(p.numel() for p in model.parameters()) * 4 / 150e6
    offset = version = 0
    for index in range(args.rounds):
        if subs.left() < 1:
            log("no submissions left: stopping")
            break
        seconds = max(0.0, clock.left() - save_reserve) / (args.rounds - index)
        if seconds < 3.0:
            log(f"{clock.left():.0f}s left: not enough for another round")
            break
        log(f"round {index + 1}/{args.rounds}: SFT for up to {seconds:.0f}s")
        started = time.monotonic()
        chunk = rows[offset:] + rows[:offset]  # each round starts where the last one ended
        model, steps = run_sft(
            model,
            tokenizer,
            chunk,
            mode=args.mode,
            seconds=seconds,
            scratch=root / "output" / ".trainer",
            batch_size=args.batch_size,
            lr=args.lr,
            epochs=args.epochs,
            max_length=args.max_length,
            lora_r=args.lora_r,
            seed=args.seed + index,
        )
        offset = (offset + steps * args.batch_size) % max(1, len(rows))
        log(f"sft: {steps} steps in {time.monotonic() - started:.0f}s")
        if steps == 0:
            continue
        version += 1
        model.eval()
        target = root / "output" / f"v{version}"
        save_reserve = max(save_reserve, 1.5 * save_checkpoint(model, tokenizer, target))
        model.train()
        subs.submit(f"output/v{version}")
        subs.poll()
    subs.wait(until=clock.deadline)
    scored = {i: s for i, s in subs.scores.items() if s is not None}
    if scored:
        best = max(scored, key=lambda i: scored[i])
        log(f"done: best submission {best} with score {scored[best]}")
    else:
        log(f"done: {len(subs.ids)} submission(s), none scored yet (the grader finishes them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
