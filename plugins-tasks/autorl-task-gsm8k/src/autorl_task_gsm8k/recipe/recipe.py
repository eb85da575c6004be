"""Scripted reference recipe for GSM8K: SFT on the worked solutions, then GRPO, in rounds.

Run by the ``scripted`` agent as ``python code/recipe.py`` inside the workspace. It uses only
the workspace (``kit/autorl_kit.py``, ``data/``, ``models/base``, ``output/``) and the grading
API. Each round: SFT with TRL's ``SFTTrainer`` in the eval's chat format (prompt =
``build_messages(question)``, completion = the solution ending in ``#### N``), merge, save
``output/vN``, submit; then GRPO with TRL's ``GRPOTrainer`` and the kit's reward, merge, save,
submit. The shared loop (``rounds.run_rounds``, one of the scripted agent's helpers copied
next to this file) sizes the phases to the budget read from ``GET /budget``, stops training at
a deadline with a safety margin, saves and submits; evaluations run on the grader while the
next phase trains. This file holds what is GSM8K's: the rows and the two phase functions.

    python code/recipe.py [--mode lora|full] [--rounds N] [--sft-batch-size 4] ...
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Any

# the scripted agent's helpers (autorl_agent_scripted.agent.HELPERS), which it copies next to
# this file into code/; `python code/recipe.py` puts code/ first on sys.path
from recipe_common import log
from rounds import Run, recipe_parser, run_rounds
from training import run_grpo, sft_in_rotation


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = recipe_parser(__doc__.splitlines()[0], rounds=True)
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
    import autorl_kit as kit  # on PYTHONPATH (workspace/kit)

    rows = kit.load_train()
    random.Random(args.seed).shuffle(rows)
    log(f"{len(rows)} train examples")
    sft = sft_in_rotation(  # each SFT phase starts in the data where the previous one stopped
        sft_rows(kit, rows),
        mode=args.mode,
        batch_size=args.sft_batch_size,
        lr=args.sft_lr,
        epochs=args.sft_epochs,
        max_length=args.max_length,
        lora_r=args.lora_r,
        deepspeed=args.deepspeed,
        processes=args.processes,
    )

    def grpo(run: Run, seconds: float) -> tuple[Any, int]:
        return run_grpo(
            run.model,
            run.tokenizer,
            grpo_rows(kit, rows),
            kit.trl_reward,
            mode=args.mode,
            seconds=seconds,
            scratch=run.scratch,
            max_steps=args.grpo_steps,
            prompts_per_step=args.grpo_prompts,
            generations=args.grpo_generations,
            lr=args.grpo_lr,
            max_new_tokens=args.grpo_max_new_tokens,
            lora_r=args.lora_r,
            seed=run.seed,
            step_times=run.step_times,
            deepspeed=args.deepspeed,
            processes=args.processes,
        )

    phases = ["sft"] if args.no_grpo else ["sft", "grpo"]
    return run_rounds(args, phases * args.rounds, {"sft": sft, "grpo": grpo})


if __name__ == "__main__":
    sys.exit(main())
