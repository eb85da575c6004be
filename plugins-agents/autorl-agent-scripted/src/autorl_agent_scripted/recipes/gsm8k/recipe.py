"""Scripted reference recipe for GSM8K: SFT on the worked solutions, then GRPO, in rounds.

Run by the ``scripted`` agent as ``python code/recipe.py`` inside the workspace. It uses only
the workspace (``kit/autorl_kit.py``, ``data/``, ``models/base``, ``output/``) and the grading
API. Each round: SFT with TRL's ``SFTTrainer`` in the eval's chat format (prompt =
``build_messages(question)``, completion = the solution ending in ``#### N``), merge, save
``output/vN``, submit; then GRPO with TRL's ``GRPOTrainer`` and the kit's reward, merge, save,
submit. Phases are sized to the budget read from ``GET /budget``; training stops at a deadline
with a safety margin, and evaluations run on the grader while the next phase trains.

    python code/recipe.py [--mode lora|full] [--rounds N] [--sft-batch-size 4] ...
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
    StepTimes,
    Submissions,
    device,
    load_base,
    log,
    save_checkpoint,
    workspace,
)
from training import phase_seconds, run_grpo, run_sft


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("lora", "full"), default=env("RECIPE_MODE", "lora"))
    p.add_argument(
        "--rounds",
        type=int,
        default=int(env("RECIPE_ROUNDS", "2")),
        help="at most this many SFT+GRPO rounds (fewer when the budget is short)",
    )
    p.add_argument("--no-grpo", action="store_true", help="SFT rounds only")
    p.add_argument("--sft-batch-size", type=int, default=4)
    p.add_argument("--sft-lr", type=float, default=None, help="default 2e-4 LoRA, 2e-5 full")
    p.add_argument("--sft-epochs", type=float, default=1.0, help="cap per SFT phase")
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--grpo-steps", type=int, default=16, help="cap per GRPO phase")
    p.add_argument("--grpo-prompts", type=int, default=2, help="questions per GRPO step")
    p.add_argument("--grpo-generations", type=int, default=4, help="completions per question")
    p.add_argument("--grpo-lr", type=float, default=None, help="default 5e-5 LoRA, 1e-6 full")
    p.add_argument("--grpo-max-new-tokens", type=int, default=160)
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


# data ------------------------------------------------------------------------------------------


def sft_rows(kit: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Conversational prompt-completion rows: TRL trains on the completion only."""
    return [
        {
            "prompt": kit.build_messages(r["question"]),
            "completion": [{"role": "assistant", "content": r["solution"]}],
        }
        for r in rows
    ]


def grpo_rows(kit: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Prompts plus the ``answer`` column the kit's ``trl_reward`` reads."""
    return [{"prompt": kit.build_messages(r["question"]), "answer": r["answer"]} for r in rows]


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
        f"budget {budget.get('remaining_s'):.0f}s left, {subs.left()} submissions; "
        f"working until {clock.left():.0f}s from now (margin {clock.margin_s:.0f}s); "
        f"mode {args.mode}, device {device()}"
    )

    rows = kit.load_train()
    random.Random(args.seed).shuffle(rows)
    log(f"{len(rows)} train examples")
    model, tokenizer = load_base(root / "models" / "base")
    log(f"loaded base model ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params)")
    scratch = root / "output" / ".trainer"
    output = root / "output"
    phases = ["sft", "grpo"] * args.rounds if not args.no_grpo else ["sft"] * args.rounds
    save_reserve = 5.0 + sum(p.numel() for p in model.parameters()) * 4 / 150e6
    version = 0
    sft_offset = 0
    step_times = StepTimes()
    for index, phase in enumerate(phases):
        if subs.left() < 1:
            log("no submissions left: stopping")
            break
        seconds = phase_seconds(clock.left(), save_reserve, len(phases) - index)
        if seconds < 3.0:
            log(f"{clock.left():.0f}s left: not enough for another {phase} phase")
            break
        log(f"phase {index + 1}/{len(phases)}: {phase} for up to {seconds:.0f}s")
        started = time.monotonic()
        if phase == "sft":
            chunk = rows[sft_offset:] + rows[:sft_offset]  # each round starts where one ended
            model, steps = run_sft(
                model,
                tokenizer,
                sft_rows(kit, chunk),
                mode=args.mode,
                seconds=seconds,
                scratch=scratch,
                batch_size=args.sft_batch_size,
                lr=args.sft_lr,
                epochs=args.sft_epochs,
                max_length=args.max_length,
                lora_r=args.lora_r,
                seed=args.seed + index,
                step_times=step_times,
            )
            sft_offset = (sft_offset + steps * args.sft_batch_size) % max(1, len(rows))
        else:
            model, steps = run_grpo(
                model,
                tokenizer,
                grpo_rows(kit, rows),
                kit.trl_reward,
                mode=args.mode,
                seconds=seconds,
                scratch=scratch,
                max_steps=args.grpo_steps,
                prompts_per_step=args.grpo_prompts,
                generations=args.grpo_generations,
                lr=args.grpo_lr,
                max_new_tokens=args.grpo_max_new_tokens,
                lora_r=args.lora_r,
                seed=args.seed + index,
                step_times=step_times,
            )
        log(f"{phase}: {steps} steps in {time.monotonic() - started:.0f}s")
        if steps == 0:
            continue
        version += 1
        model.eval()
        save_reserve = max(
            save_reserve, 1.5 * save_checkpoint(model, tokenizer, output / f"v{version}")
        )
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
