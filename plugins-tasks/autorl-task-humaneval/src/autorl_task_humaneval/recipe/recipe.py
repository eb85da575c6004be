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

With the reference prompt (task option ``prompt = "reference"``) the same steps use the kit's
chat prompt: ``prompt_ids(problem, tokenizer)`` (the chat template, as the evaluator encodes it)
and, as the target, ``answer_text(problem, body)`` (the whole function in a code block).

Why not GRPO by default: a 135M model passes few train problems, so most GRPO groups have all
rewards 0 (no advantage, no gradient) while each step costs a full batch of sampled code on CPU.
Filtering samples through the tests spends the same generation on a denser signal.

Phases get equal shares of the time read from ``GET /budget`` (a safety margin and a save's
time per phase kept free) and stop between steps at their deadline; evaluations run on the
grader while the next phase trains. That loop is the shared ``rounds.run_rounds``; the SFT
phase is the shared ``training.run_sft`` (pre-tokenized rows).

    python code/recipe.py [--mode lora|full] [--sft-epochs 3] [--ei-rounds 1] ...
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

# the scripted agent's helpers (autorl_agent_scripted.agent.HELPERS), which it copies next to
# this file into code/; `python code/recipe.py` puts code/ first on sys.path
from recipe_common import log
from rounds import Run, recipe_parser, reserve_each_save, run_rounds
from training import run_sft


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ.get
    p = recipe_parser(__doc__.splitlines()[0])
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
    return p.parse_args(argv)


# data ------------------------------------------------------------------------------------------


def sft_text(kit: Any, problem: dict[str, Any], solution: str | None = None) -> str:
    """The text SFT learns: the evaluator's prompt continued by a correct body."""
    body = problem["canonical_solution"] if solution is None else solution
    return kit.build_prompt(problem) + body


def sft_example(
    kit: Any, tokenizer: Any, problem: dict[str, Any], solution: str, max_length: int
) -> dict[str, list[int]]:
    """Token ids of prompt + solution + EOS, and a mask that marks the solution (the loss);
    ``solution`` is the whole reply (``kit.answer_text``: the body itself with the default prompt).

    The prompt is tokenized alone with the tokenizer's special tokens, as the evaluator's
    generation does, and the solution separately: joint tokenization could merge the prompt's
    last ``\\n`` with the body's indentation into a token the model never sees at eval time.
    """
    prompt_ids = kit.prompt_ids(problem, tokenizer)
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


def canonical_pairs(
    problems: list[dict[str, Any]], kit: Any = None
) -> list[tuple[dict[str, Any], str]]:
    """(problem, reply) with the canonical solution, as the kit's protocol wants it replied."""
    if kit is None:
        return [(p, p["canonical_solution"]) for p in problems]
    return [(p, kit.answer_text(p, p["canonical_solution"])) for p in problems]


def prompt_texts(kit: Any, tokenizer: Any, problems: list[dict[str, Any]]) -> list[str]:
    """The text each prompt is sampled from: the prompt itself, or chat messages through the
    tokenizer's chat template with the generation prompt (the reference prompt)."""
    texts = []
    for problem in problems:
        prompt = kit.build_prompt(problem)
        if not isinstance(prompt, str):
            prompt = tokenizer.apply_chat_template(
                prompt, tokenize=False, add_generation_prompt=True
            )
        texts.append(prompt)
    return texts


# expert iteration ------------------------------------------------------------------------------


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
    add_special_tokens: bool = True,
) -> list[list[str]]:
    """``n`` sampled continuations per prompt text, batched (``add_special_tokens=False`` for
    texts already rendered through a chat template).

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
        enc = tokenizer(
            [prompts[i] for i in batch],
            return_tensors="pt",
            padding=True,
            add_special_tokens=add_special_tokens,
        )
        enc = enc.to(model.device)
        with torch.no_grad():
            generated = model.generate(
                **enc,
                do_sample=True,
                temperature=temperature,
                top_p=0.95,
                max_new_tokens=max_new_tokens,
                stop_strings=list(stop) or None,
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
        seen = {kit.answer_text(problem, problem["canonical_solution"]).strip()}
        for text in texts:
            body = kit.truncate(text).rstrip() + "\n"
            if body.strip() and body.strip() not in seen:
                seen.add(body.strip())
                candidates.append((problem, body))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        rewards = list(pool.map(lambda pair: kit.reward(pair[1], pair[0]), candidates))
    return [pair for pair, r in zip(candidates, rewards, strict=True) if r >= 1.0]


# plan ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import autorl_kit as kit  # on PYTHONPATH (workspace/kit)

    problems = kit.load_train()
    random.Random(args.seed).shuffle(problems)
    log(f"{len(problems)} train problems")
    pairs = canonical_pairs(problems, kit)
    chat = bool(problems) and not isinstance(kit.build_prompt(problems[0]), str)

    def sft(run: Run, seconds: float) -> tuple[Any, int]:
        """SFT on every (problem, body) pair found so far."""
        rows = sft_rows(kit, run.tokenizer, pairs, args.max_length)
        return run_sft(
            run.model,
            run.tokenizer,
            rows,
            mode=args.mode,
            seconds=seconds,
            scratch=run.scratch,
            batch_size=args.sft_batch_size,
            lr=args.sft_lr,
            max_steps=max(1, round(len(rows) * args.sft_epochs / args.sft_batch_size)),
            max_length=None,  # rows are already cut to --max-length
            lora_r=args.lora_r,
            seed=run.seed,
            step_times=run.step_times,
            gradient_checkpointing=True,  # TRL's default, which the measured runs had
        )

    def ei(run: Run, seconds: float) -> tuple[Any, int]:
        """Sample, keep the bodies that pass the tests, then SFT for the rest of the phase."""
        nonlocal pairs
        started = time.monotonic()
        sampled = sample_completions(
            run.model,
            run.tokenizer,
            prompt_texts(kit, run.tokenizer, problems),
            stop=tuple(kit.STOP_SEQUENCES),
            n=args.ei_samples,
            temperature=args.ei_temperature,
            max_new_tokens=args.ei_max_new_tokens,
            batch_size=args.ei_batch_size,
            deadline=started + seconds * args.ei_sample_share,
            seed=run.seed,
            add_special_tokens=not chat,
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
            return run.model, 0
        return sft(run, train_seconds)

    def phases(run: Run) -> list[str]:
        """SFT, then ``--ei-rounds`` expert-iteration phases: no more than submissions left."""
        return (["sft"] + ["ei"] * max(0, args.ei_rounds))[: max(1, run.subs.left())]

    return run_rounds(args, phases, {"sft": sft, "ei": ei}, share=reserve_each_save)


if __name__ == "__main__":
    sys.exit(main())
