"""Scripted reference recipe for WebShop: SFT warm-up on demonstrations, then online GRPO.

Run by the ``scripted`` agent as ``python code/recipe.py`` inside the workspace; the route is
:mod:`interactive` (shared by the interactive tasks), the data is the kit's train sessions.

Demonstrations (``--demos``): ``direct`` (default) plays the kit expert's search and product
click, then buys at once; ``expert`` is the kit's expert, which also clicks every wanted
option. A session succeeds at reward >= 0.5, which the right product earns without its options
on ~90 % of the train sessions (the expert: 100 %), and the direct episode is one decision
shorter: after opening a product, buy. A 135M model trained for minutes on CPU learns that
rule; with the expert's episodes it learnt to pick an option, then kept clicking it
(measured: 12.5 % of 40 eval sessions, most episodes looping on an option until the step
limit).

    python code/recipe.py [--demos direct|expert] [--mode lora|full] [--no-grpo] ...
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

# the scripted agent's helpers (autorl_agent_scripted.agent.HELPERS), which it copies next to
# this file into code/; `python code/recipe.py` puts code/ first on sys.path
import interactive

NAVIGATION = ("next >", "< prev", "back to search")
DEFAULTS = ["--grpo-sessions", "1", "--sft-share", "0.7", "--max-new-tokens", "24"]
"""Task defaults, before the agent's own flags (argparse keeps the last value), sized to the
default 8-minute CPU budget: 70 % of it for SFT (measured 294-301 s, 65-80 steps of 4 turns),
the rest for GRPO steps of one session x 4 episodes, sampled again while every group scored
alike (a step measured 24-82 s beside v1's evaluation), replies of at most 24 tokens (the
longest action is ~15)."""


def direct_actions(expert: list[str]) -> list[str]:
    """The expert's actions up to its product click, then ``click[buy now]``."""
    for index, action in enumerate(expert):
        button = action[len("click[") : -1] if action.startswith("click[") else None
        if button is not None and button not in NAVIGATION:
            return [*expert[: index + 1], "click[buy now]"]
    return expert


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--demos",
        choices=("direct", "expert"),
        default="direct",
        help="SFT demonstrations: direct (search, product, buy) or the kit's expert",
    )


def main(argv: list[str] | None = None) -> int:
    flags = DEFAULTS + list(sys.argv[1:] if argv is None else argv)
    args = interactive.parse_args(flags, __doc__.splitlines()[0], add_arguments)
    import autorl_kit as kit  # on PYTHONPATH (workspace/kit)

    def direct(session_id: str) -> dict[str, Any]:
        return interactive.replay(kit, session_id, direct_actions(kit.expert_actions(session_id)))

    return interactive.main(kit, args, direct if args.demos == "direct" else None)


if __name__ == "__main__":
    sys.exit(main())
