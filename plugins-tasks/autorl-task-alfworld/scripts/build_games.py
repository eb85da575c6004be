"""Build the shipped ALFWorld game set from the engine's PDDL domain, grammar and tables.

    python scripts/build_games.py            # write src/autorl_task_alfworld/data/games_*.jsonl
    python scripts/build_games.py --check    # exit 1 unless the shipped files are what this builds
    python scripts/build_games.py --verify   # also play every game with ALFWorld's expert

Generation is deterministic (seeded), so ``--check`` proves the shipped files come from this
code. ``--verify`` runs each game in the real engine with the hand-coded expert and fails if a
game is not won (slow: a few seconds per game).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from autorl_task_alfworld.games import dumps_records, engine_logic, materialize
from autorl_task_alfworld.generate import build_game_set

DATA_DIR = Path(__file__).resolve().parents[1] / "src" / "autorl_task_alfworld" / "data"
N_TRAIN = 120
N_EVAL = 40
SEED = 0


def verify(records: list, max_steps: int = 50) -> list[str]:
    """Ids of the games the hand-coded expert does not win within ``max_steps``."""
    from autorl_task_alfworld.env import AlfWorldEnv

    domain, grammar = engine_logic()
    with tempfile.TemporaryDirectory() as tmp:
        files = {r.id: materialize(r, Path(tmp) / r.id, domain, grammar) for r in records}
        env = AlfWorldEnv(files, max_steps=max_steps, expert=True)
        lost = []
        for record in records:
            _, info = env.reset(record.id)
            done = False
            while not done and info.get("expert_action"):
                _, _, done, info = env.step(info["expert_action"])
            print(f"{record.id} {'won' if info['success'] else 'LOST'} steps={info['steps']}")
            if not info["success"]:
                lost.append(record.id)
        return lost


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped files")
    parser.add_argument("--verify", action="store_true", help="play every game with the expert")
    args = parser.parse_args(argv)
    sets = build_game_set(N_TRAIN, N_EVAL, SEED)
    texts = {split: dumps_records(records) for split, records in sets.items()}
    if args.verify:
        lost = verify(sets["train"] + sets["eval"])
        if lost:
            print(f"not won by the expert: {', '.join(lost)}", file=sys.stderr)
            return 1
    for split, text in texts.items():
        path = DATA_DIR / f"games_{split}.jsonl"
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                print(f"{path} differs from what scripts/build_games.py builds", file=sys.stderr)
                return 1
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        print(f"{split}: {len(sets[split])} games -> {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
