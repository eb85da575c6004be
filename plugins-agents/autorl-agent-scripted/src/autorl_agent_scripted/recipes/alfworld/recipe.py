"""Scripted reference recipe for ALFWorld: SFT warm-up on the kit's expert, then online GRPO.

Run by the ``scripted`` agent as ``python code/recipe.py`` inside the workspace; the route is
:mod:`interactive` (shared by the interactive tasks, the paper's best ALFWorld route), the data
ALFWorld's hand-coded expert on the kit's train games (``kit.expert_episode``), the rollouts the
real engine (``kit.make_env``). ALFWorld-sized defaults: prompts are long (two ReAct examples,
~1,200 tokens with the tiny model's tokenizer, ~800 with SmolLM2's), so ``--max-length`` keeps
them whole; an expert game costs ~1.2 s of CPU in the engine, so 48 expert games by default;
GRPO steps play 2 games x 4 episodes (each up to the task's 50 steps). SFT batches of 4: the
prompt runs without gradient (no activations kept for it), so memory stays small; with full
backpropagation 8 x 1,408 tokens had taken 10 GB and the OOM killer.

    python code/recipe.py [--mode lora|full] [--no-grpo] [--sft-share 0.55] ...
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import interactive

DEFAULTS = [
    "--max-length",
    "1408",
    "--max-new-tokens",
    "40",
    "--sft-batch-size",
    "4",
    "--sft-episodes",
    "48",
    "--grpo-sessions",
    "2",
    "--grpo-group",
    "4",
]
"""Task defaults, before the agent's own flags (argparse keeps the last value)."""


def main(argv: list[str] | None = None) -> int:
    flags = DEFAULTS + list(sys.argv[1:] if argv is None else argv)
    args = interactive.parse_args(flags, description=__doc__.splitlines()[0])
    import autorl_kit as kit  # on PYTHONPATH (workspace/kit)

    return interactive.main(kit, args)


if __name__ == "__main__":
    sys.exit(main())
