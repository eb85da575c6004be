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
    estimate_generation_step_seconds,
    fit_generation_shape,
    load_base,
    log,
    merged,
    phase_warmup,
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


def lora_config(r: int) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )


def _common_args(scratch: Path, seed: int) -> dict[str, Any]:
    on_gpu = device() == "cuda"
    return {
        "output_dir": str(scratch),
        "save_strategy": "no",
        "report_to": "none",
        "logging_steps": 1,
        "disable_tqdm": True,
        "seed": seed,
        "bf16": on_gpu,
        "use_cpu": not on_gpu,
        "dataloader_num_workers": 0,
        "gradient_checkpointing": False,  # small models: compute, not memory, is the limit
    }


# phases ----------------------------------------------------------------------------------------


def run_sft(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    *,
    mode: str,
    seconds: float,
    scratch: Path,
    batch_size: int = 4,
    lr: float | None = None,
    epochs: float = 1.0,
    max_length: int = 512,
    lora_r: int = 16,
    seed: int = 0,
    step_times: StepTimes | None = None,
) -> tuple[Any, int]:
    """SFT until ``seconds`` pass or ``epochs`` are done; returns (merged model, steps run).

    Warm-up is sized to the steps the phase can run (none when short or not yet timed).
    """
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    tokenizer.padding_side = "right"
    max_steps = max(1, int(len(rows) * epochs / batch_size))
    step_s = step_times.get("sft") if step_times else None
    config = SFTConfig(
        **_common_args(scratch, seed),
        per_device_train_batch_size=batch_size,
        learning_rate=lr or (2e-4 if mode == "lora" else 2e-5),
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=phase_warmup(max_steps, seconds, step_s),
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
        callbacks=[stopper := stop_at_callback(time.monotonic() + seconds, label="sft")],
    )
    log(f"  sft: up to {max_steps} steps, warm-up {config.warmup_steps}")
    trainer.train()
    if step_times is not None:
        step_times.record("sft", stopper)
    steps = trainer.state.global_step
    return merged(trainer.model), steps


def run_grpo(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    reward_fn: Any,
    *,
    mode: str,
    seconds: float,
    scratch: Path,
    max_steps: int = 16,
    prompts_per_step: int = 2,
    generations: int = 4,
    lr: float | None = None,
    max_new_tokens: int = 160,
    lora_r: int = 16,
    seed: int = 0,
    step_times: StepTimes | None = None,
) -> tuple[Any, int]:
    """GRPO with the kit's reward until ``seconds`` pass or ``max_steps``; (merged model, steps).

    With ``step_times``, the step shape is fitted to the time share first: the seconds of one
    step (measured in an earlier GRPO phase, else estimated from a short sampled generation)
    decide whether fewer new tokens, prompts or generations are needed for two steps to fit.
    """
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    if step_times is not None:
        shape = (prompts_per_step, generations, max_new_tokens)
        step_s = step_times.get("grpo", size=prompts_per_step * generations * max_new_tokens)
        if step_s is None:
            prompt = tokenizer.apply_chat_template(
                rows[0]["prompt"], tokenize=False, add_generation_prompt=True
            )
            step_s = estimate_generation_step_seconds(
                model, tokenizer, prompt, prompts_per_step * generations, max_new_tokens
            )
        prompts_per_step, generations, max_new_tokens = fit_generation_shape(
            seconds, step_s, prompts_per_step, generations, max_new_tokens
        )
        if (prompts_per_step, generations, max_new_tokens) != shape:
            log(
                f"  grpo: a {shape[0]}x{shape[1]}x{shape[2]} step takes ~{step_s:.0f}s, too "
                f"long for {seconds:.0f}s; using {prompts_per_step} prompts x {generations} "
                f"generations x {max_new_tokens} new tokens"
            )
    tokenizer.padding_side = "left"
    config = GRPOConfig(
        **_common_args(scratch, seed),
        per_device_train_batch_size=prompts_per_step * generations,
        num_generations=generations,
        max_completion_length=max_new_tokens,
        learning_rate=lr or (5e-5 if mode == "lora" else 1e-6),
        max_steps=max_steps,
        beta=0.0,  # no reference model: half the memory and forward passes
        temperature=1.0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward_fn],
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora_config(lora_r) if mode == "lora" else None,
        callbacks=[stopper := stop_at_callback(time.monotonic() + seconds, label="grpo")],
    )
    trainer.train()
    if step_times is not None:
        step_times.record("grpo", stopper, size=prompts_per_step * generations * max_new_tokens)
    steps = trainer.state.global_step
    return merged(trainer.model), steps


# plan ------------------------------------------------------------------------------------------


def phase_seconds(left: float, reserve: float, phases_left: int, weight: float = 1.0) -> float:
    """This phase's share of the time left after keeping ``reserve`` for its save."""
    usable = left - reserve
    return max(0.0, usable * weight / max(1, phases_left))


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
