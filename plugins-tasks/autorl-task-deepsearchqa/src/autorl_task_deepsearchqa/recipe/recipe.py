"""Scripted reference recipe for DeepSearchQA: SFT warm-up on the kit's expert, then online GRPO.

Run by the ``scripted`` agent as ``python code/recipe.py`` inside the workspace; the route is
:mod:`interactive` (shared by the interactive tasks), the data is the kit's train questions (the
expert searches what finds each supporting entry, then answers), the reward the kit's rule judge.
Replies get 64 new tokens by default: the longest expert action (a four-item set answer) is 48
tokens with the tiny model's tokenizer.

    python code/recipe.py [--mode lora|full] [--no-grpo] [--sft-share 0.55] ...
"""

from __future__ import annotations

import sys

# the scripted agent's helpers (autorl_agent_scripted.agent.HELPERS), which it copies next to
# this file into code/; `python code/recipe.py` puts code/ first on sys.path
import interactive

DEFAULTS = ["--max-new-tokens", "64"]
"""Task defaults, before the agent's own flags (argparse keeps the last value)."""


def main(argv: list[str] | None = None) -> int:
    flags = DEFAULTS + list(sys.argv[1:] if argv is None else argv)
    args = interactive.parse_args(flags, description=__doc__.splitlines()[0])
    import autorl_kit as kit  # on PYTHONPATH (workspace/kit)

    return interactive.main(kit, args)


if __name__ == "__main__":
    sys.exit(main())
