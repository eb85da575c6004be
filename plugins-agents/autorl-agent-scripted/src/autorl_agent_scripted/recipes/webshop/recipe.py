"""Scripted reference recipe for WebShop: SFT warm-up on the kit's expert, then online GRPO.

Run by the ``scripted`` agent as ``python code/recipe.py`` inside the workspace; the route is
:mod:`interactive` (shared by the interactive tasks), the data is the kit's train sessions.

    python code/recipe.py [--mode lora|full] [--no-grpo] [--sft-share 0.55] ...
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import interactive


def main(argv: list[str] | None = None) -> int:
    args = interactive.parse_args(argv, description=__doc__.splitlines()[0])
    import autorl_kit as kit  # on PYTHONPATH (workspace/kit)

    return interactive.main(kit, args)


if __name__ == "__main__":
    sys.exit(main())
