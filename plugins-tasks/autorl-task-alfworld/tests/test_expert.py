"""ALFWorld's hand-coded expert wins every shipped train game in the real engine.

About 1.2 s of CPU per game (engine reset + ~20 steps): the 120 games are split over two
processes, so this takes ~1.5 minutes on two idle cores.
"""

from __future__ import annotations

import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from autorl_task_alfworld.games import read_records
from autorl_task_alfworld.task import SHIPPED

WORKERS = 2


def _play(ids: list[str]) -> dict[str, tuple[bool, int]]:
    from autorl_task_alfworld.env import DEFAULT_MAX_STEPS, AlfWorldEnv
    from autorl_task_alfworld.games import engine_logic, materialize

    records = {r.id: r for r in read_records(SHIPPED["train"])}
    domain, grammar = engine_logic()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = {i: materialize(records[i], Path(tmp) / i, domain, grammar) for i in ids}
        env = AlfWorldEnv(files, max_steps=DEFAULT_MAX_STEPS, expert=True)
        for session_id in ids:
            _, info = env.reset(session_id)
            done = False
            while not done and info["expert_action"]:
                _, _, done, info = env.step(info["expert_action"])
            results[session_id] = (bool(info["success"]), int(info["steps"]))
    return results


@pytest.mark.slow
def test_expert_wins_every_train_game_within_the_step_limit() -> None:
    ids = [r.id for r in read_records(SHIPPED["train"])]
    chunks = [ids[i::WORKERS] for i in range(WORKERS)]
    results: dict[str, tuple[bool, int]] = {}
    with ProcessPoolExecutor(max_workers=WORKERS) as pool:
        for part in pool.map(_play, chunks):
            results.update(part)
    lost = sorted(i for i, (won, _) in results.items() if not won)
    assert len(results) == len(ids) and not lost, f"the expert did not win: {lost}"
