"""Scripted reference recipe for HumanEval: SFT on the canonical solutions, then expert iteration.

Run by the ``scripted`` agent as ``python code/recipe.py`` inside the workspace. It uses only
the workspace (``kit/autorl_kit.py``, ``data/train.jsonl``, ``models/base``, ``output/``) and
the grading API.

1. SFT (LoRA by default) on ``build_prompt(problem) + canonical_solution + EOS`` for the train
   problems: exactly the plain-text prompt the ``code`` evaluator sends, loss on the solution
   only. The prompt is tokenized on its own, as the evaluator does, so training sees the same
   token boundary that generation starts from. Merge, save ``output/vN``, submit.
2. Expert iteration (rejection sampling), ``--ei-rounds`` times: sample ``--ei-samples``
   completions per train problem at ``--ei-temperature``, keep those that pass the problem's
   tests (``kit.reward``, a sandboxed child process), and SFT on canonical + passing samples.
   Merge, save, submit.

Why not GRPO by default: a 135M model passes few train problems, so most GRPO groups have all
rewards 0 (no advantage, no gradient) while each step costs a full batch of sampled code on CPU.
Filtering samples through the tests spends the same generation on a denser signal.

Phases get equal shares of the time read from ``GET /budget`` (a safety margin kept free) and
stop between steps at their deadline; evaluations run on the grader while the next phase trains.

    python code/recipe.py [--mode lora|full] [--sft-epochs 3] [--ei-rounds 1] ...
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
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
    merged,
    phase_warmup,
    planned_steps,
    save_checkpoint,
    stop_at_callback,
    workspace,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("lora", "full"), default=env("RECIPE_MODE", "lora"))
    p.add_argument("--sft-batch-size", type=int, default=4)
    p.add_argument("--sft-lr", type=float, default=None, help="default 2e-4 LoRA, 2e-5 full")
    p.add_argument("--sft-epochs", type=float, default=3.0, help="cap per SFT phase")
    p.add_argument("--max-length", type=int, default=768, help="tokens per training example")
    p.add_argument(
        "--ei-rounds",
        type=int,
        default=int(env("RECIPE_EI_ROUNDS", "1")),
        help="expert-iteration rounds after the first SFT (0: SFT only)",
    )
    p.add_argument("--ei-samples", type=int, default=4, help="samples per train problem")
    p.add_argument("--ei-temperature", type=float, default=0.8)
    p.add_argument("--ei-max-new-tokens", type=int, default=256)
    p.add_argument("--ei-batch-size", type=int, default=16, help="sequences per generate call")
    p.add_argument(
        "--ei-sample-share",
        type=float,
        default=0.6,
        help="share of an expert-iteration phase spent sampling (the rest trains)",
    )
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


def sft_text(kit: Any, problem: dict[str, Any], solution: str | None = None) -> str:
    """The text SFT learns: the evaluator's prompt continued by a correct body."""
    body = problem["canonical_solution"] if solution is None else solution
    return kit.build_prompt(problem) + body


def sft_example(
    kit: Any, tokenizer: Any, problem: dict[str, Any], solution: str, max_length: int
) -> dict[str, list[int]]:
    """Token ids of prompt + solution + EOS, and a mask that marks the solution (the loss).

    The prompt is tokenized alone with the tokenizer's special tokens, as the evaluator's
    generation does, and the solution separately: joint tokenization could merge the prompt's
    last ``\\n`` with the body's indentation into a token the model never sees at eval time.
    """
    prompt_ids = list(tokenizer(kit.build_prompt(problem))["input_ids"])
    body_ids = list(tokenizer(solution, add_special_tokens=False)["input_ids"])
    body_ids.append(tokenizer.eos_token_id)
    ids = (prompt_ids + body_ids)[:max_length]
    mask = ([0] * len(prompt_ids) + [1] * len(body_ids))[:max_length]
    return {"input_ids": ids, "completion_mask": mask}


def sft_rows(
    kit: Any,
    tokenizer: Any,
    pairs: list[tuple[dict[str, Any], str]],
    max_length: int,
) -> list[dict[str, list[int]]]:
    """Pre-tokenized rows for TRL's ``SFTTrainer``; rows with no solution token left are dropped."""
    rows = [sft_example(kit, tokenizer, p, s, max_length) for p, s in pairs]
    return [r for r in rows if any(r["completion_mask"])]


def canonical_pairs(problems: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    return [(p, p["canonical_solution"]) for p in problems]


# phases ----------------------------------------------------------------------------------------


def lora_config(r: int) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )


def run_sft(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, list[int]]],
    *,
    mode: str,
    seconds: float,
    scratch: Path,
    batch_size: int = 4,
    lr: float | None = None,
    epochs: float = 3.0,
    lora_r: int = 16,
    seed: int = 0,
    step_times: StepTimes | None = None,
) -> tuple[Any, int]:
    """SFT until ``seconds`` pass or ``epochs`` are done; returns (merged model, steps run)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    on_gpu = device() == "cuda"
    tokenizer.padding_side = "right"
    cap = max(1, round(len(rows) * epochs / batch_size))
    step_s = step_times.get("sft") if step_times else None
    expected = planned_steps(cap, seconds, step_s)
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
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=phase_warmup(cap, seconds, step_s),
        max_steps=cap,
        max_length=None,  # rows are already cut to --max-length
        completion_only_loss=True,
    )
    stopper = stop_at_callback(time.monotonic() + seconds, label="sft")
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora_config(lora_r) if mode == "lora" else None,
        callbacks=[stopper],
    )
    timing = f"{expected} expected at {step_s:.1f}s a step" if step_s else "step time unknown"
    log(
        f"sft: {len(rows)} examples, up to {cap} steps in {seconds:.0f}s ({timing}), "
        f"warm-up {config.warmup_steps}"
    )
    trainer.train()
    if step_times is not None:
        step_times.record("sft", stopper)
    return merged(trainer.model), trainer.state.global_step


def sample_completions(
    model: Any,
    tokenizer: Any,
    prompts: list[str],
    *,
    stop: tuple[str, ...],
    n: int,
    temperature: float,
    max_new_tokens: int,
    batch_size: int,
    deadline: float,
    seed: int = 0,
) -> list[list[str]]:
    """``n`` sampled continuations per prompt (plain text, no chat template), batched.

    Stops between batches at ``deadline``: prompts not reached get no samples. The first batch
    is small (4 sequences) and times the sampling, so a batch that would end past the deadline
    is never started (one full batch of a 135M model can take minutes on a loaded CPU).
    """
    import torch

    jobs = [i for i in range(len(prompts)) for _ in range(n)]
    out: list[list[str]] = [[] for _ in prompts]
    if not jobs:
        return out
    model.eval()
    tokenizer.padding_side = "left"
    torch.manual_seed(seed)
    batches = [jobs[: min(4, batch_size)]]
    batches += [jobs[s : s + batch_size] for s in range(len(batches[0]), len(jobs), batch_size)]
    per_sequence = 0.0
    done = 0
    for batch in batches:
        if time.monotonic() + per_sequence * len(batch) > deadline:
            log(f"  sampling stopped at the deadline: {done}/{len(jobs)} samples")
            break
        began = time.monotonic()
        enc = tokenizer([prompts[i] for i in batch], return_tensors="pt", padding=True)
        enc = enc.to(model.device)
        with torch.no_grad():
            generated = model.generate(
                **enc,
                do_sample=True,
                temperature=temperature,
                top_p=0.95,
                max_new_tokens=max_new_tokens,
                stop_strings=list(stop),
                tokenizer=tokenizer,
                pad_token_id=tokenizer.pad_token_id,
            )
        new = generated[:, enc["input_ids"].shape[1] :]
        for i, text in zip(
            batch, tokenizer.batch_decode(new, skip_special_tokens=True), strict=True
        ):
            out[i].append(text)
        done += len(batch)
        per_sequence = max(per_sequence, (time.monotonic() - began) / len(batch))
    model.train()
    return out


def passing_pairs(
    kit: Any, problems: list[dict[str, Any]], samples: list[list[str]], workers: int = 2
) -> list[tuple[dict[str, Any], str]]:
    """(problem, body) for each distinct sampled body that passes the problem's tests."""
    candidates: list[tuple[dict[str, Any], str]] = []
    for problem, texts in zip(problems, samples, strict=True):
        seen = {problem["canonical_solution"].strip()}
        for text in texts:
            body = kit.truncate(text).rstrip() + "\n"
            if body.strip() and body.strip() not in seen:
                seen.add(body.strip())
                candidates.append((problem, body))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        rewards = list(pool.map(lambda pair: kit.reward(pair[1], pair[0]), candidates))
    return [pair for pair, r in zip(candidates, rewards, strict=True) if r >= 1.0]


# plan ------------------------------------------------------------------------------------------


def phase_seconds(left: float, reserve: float, phases_left: int) -> float:
    """This phase's share of the time left after keeping ``reserve`` for each save to come."""
    return max(0.0, (left - reserve * phases_left) / max(1, phases_left))


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
    problems = kit.load_train()
    random.Random(args.seed).shuffle(problems)
    log(f"{len(problems)} train problems")
    model, tokenizer = load_base(root / "models" / "base")
    log(f"loaded base model ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params)")
    scratch, output = root / "output" / ".trainer", root / "output"
    save_reserve = 5.0 + sum(p.numel() for p in model.parameters()) * 4 / 150e6
    step_times = StepTimes()
    pairs = canonical_pairs(problems)
    phases = (["sft"] + ["ei"] * max(0, args.ei_rounds))[: max(1, subs.left())]
    version = 0
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
        train_seconds = seconds
        if phase == "ei":
            sampled = sample_completions(
                model,
                tokenizer,
                [kit.build_prompt(p) for p in problems],
                stop=tuple(kit.STOP_SEQUENCES),
                n=args.ei_samples,
                temperature=args.ei_temperature,
                max_new_tokens=args.ei_max_new_tokens,
                batch_size=args.ei_batch_size,
                deadline=started + seconds * args.ei_sample_share,
                seed=args.seed + index,
            )
            found = passing_pairs(kit, problems, sampled)
            solved = len({p["task_id"] for p, _ in found})
            tried = sum(1 for s in sampled if s)
            log(
                f"  expert iteration: {sum(map(len, sampled))} samples on {tried} problems, "
                f"{len(found)} new passing bodies on {solved} problems "
                f"({time.monotonic() - started:.0f}s)"
            )
            pairs = pairs + found
            train_seconds = seconds - (time.monotonic() - started)
            if train_seconds < 3.0:
                log("  no time left in this phase to train on them")
                continue
        model, steps = run_sft(
            model,
            tokenizer,
            sft_rows(kit, tokenizer, pairs, args.max_length),
            mode=args.mode,
            seconds=train_seconds,
            scratch=scratch,
            batch_size=args.sft_batch_size,
            lr=args.sft_lr,
            epochs=args.sft_epochs,
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
