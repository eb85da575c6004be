"""Scripted reference recipe for AlpacaEval: SFT (LoRA by default) on the train answers, in rounds.

Run by the ``scripted`` agent as ``python code/recipe.py`` inside the workspace. It uses only
the workspace (``kit/autorl_kit.py``, ``data/``, ``models/base``, ``output/``) and the grading
API. Each round: SFT with TRL's ``SFTTrainer`` in the eval's chat format (prompt =
``build_messages(instruction, input)``, completion = the train answer; loss on the completion
only), merge the adapter, save ``output/vN``, submit, and go on training while the grader judges.
There is no RL phase: the reward is an LLM judge the agent cannot call, and supervised routes
are what moved this task in the reference study. Rounds are sized to the budget from
``GET /budget``; training stops at a deadline with a safety margin (the shared
``rounds.run_rounds`` and ``training.run_sft``).

    python code/recipe.py [--mode lora|full] [--rounds N] [--batch-size 4] [--lr 2e-4] ...
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Any

# the scripted agent's helpers (autorl_agent_scripted.agent.HELPERS), which it copies next to
# this file into code/; `python code/recipe.py` puts code/ first on sys.path
from recipe_common import log
from rounds import recipe_parser, run_rounds
from training import sft_in_rotation


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = recipe_parser(__doc__.splitlines()[0], rounds=True)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--lr", type=float, default=None, help="default 2e-4 LoRA, 2e-5 full")
    p.add_argument("--epochs", type=float, default=1.0, help="cap per round")
    p.add_argument("--max-length", type=int, default=512)
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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import autorl_kit as kit  # on PYTHONPATH (workspace/kit)

    rows = sft_rows(kit, kit.load_train())
    random.Random(args.seed).shuffle(rows)
    log(f"{len(rows)} train examples")
    sft = sft_in_rotation(  # each round starts in the data where the previous one stopped
        rows,
        timed=False,  # no warm-up: every step of a short round at the full rate
        mode=args.mode,
        batch_size=args.batch_size,
        lr=args.lr,
        epochs=args.epochs,
        max_length=args.max_length,
        lora_r=args.lora_r,
        gradient_checkpointing=True,  # TRL's default, which the measured runs had
    )
    return run_rounds(args, ["SFT"] * args.rounds, {"SFT": sft}, label="round")


if __name__ == "__main__":
    sys.exit(main())
