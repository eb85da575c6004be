"""ALFWorld's hand-coded expert wins every shipped train game in the real engine.

All 120 games cost about 1.2 s of CPU each on the Intel host (engine reset + ~20 steps) and
4.6 CPU-min on a 2x slower AMD one: the largest CPU-bound test of the suite, checking data that
changes only when someone regenerates it. So the full check is recorded: ``expert_verified.json``
holds the digest of what decides the outcome (the games file, the environment's modules, the
TextWorld and ALFWorld versions) from the last time every game was won. While the digest
matches, two games of each task type (12) are played, enough to catch the engine or the
expert breaking; when it differs, all 120 are played, and the test fails until the new digest
is recorded (the message gives it), so a change to the games is never taken on trust.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from autorl_task_alfworld.games import read_records
from autorl_task_alfworld.task import PACKAGE_DIR, SHIPPED

WORKERS = 2
RECORD = Path(__file__).with_name("expert_verified.json")
PER_TYPE = 2


def digest() -> str:
    """What decides whether the expert wins: the games, the environment, the engine."""
    h = hashlib.sha256()
    for path in (SHIPPED["train"], *(PACKAGE_DIR / m for m in ("env.py", "games.py"))):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    for dist in ("textworld", "alfworld"):
        h.update(f"{dist}=={md.version(dist)}".encode())
    return h.hexdigest()


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


def play(ids: list[str]) -> dict[str, tuple[bool, int]]:
    chunks = [ids[i::WORKERS] for i in range(WORKERS)]
    results: dict[str, tuple[bool, int]] = {}
    with ProcessPoolExecutor(max_workers=WORKERS) as pool:
        for part in pool.map(_play, chunks):
            results.update(part)
    return results


@pytest.mark.slow
def test_expert_wins_every_train_game_within_the_step_limit() -> None:
    records = read_records(SHIPPED["train"])
    now = digest()
    recorded = json.loads(RECORD.read_text()) if RECORD.is_file() else {}
    if recorded.get("digest") == now:  # all 120 were won with exactly these inputs
        by_type: dict[str, list[str]] = {}
        for r in records:
            by_type.setdefault(r.task_type, []).append(r.id)
        ids = [i for kept in by_type.values() for i in kept[:PER_TYPE]]
        assert len(by_type) == 6 and len(ids) == 6 * PER_TYPE
    else:
        ids = [r.id for r in records]
    results = play(ids)
    lost = sorted(i for i, (won, _) in results.items() if not won)
    assert len(results) == len(ids) and not lost, f"the expert did not win: {lost}"
    assert recorded.get("digest") == now, (
        f"the expert won all {len(ids)} train games with changed games, environment or engine: "
        f"record it in {RECORD.name}: "
        + json.dumps({"digest": now, "games": len(ids), "won": len(ids)})
    )
