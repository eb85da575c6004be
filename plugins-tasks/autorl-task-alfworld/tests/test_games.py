"""The shipped game set: built by the script, six task types, train and eval disjoint."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

from autorl_task_alfworld.games import read_records
from autorl_task_alfworld.generate import (
    EVAL_LAYOUTS,
    RESERVED_GOALS,
    TASK_TYPES,
    TRAIN_LAYOUTS,
    goal_key,
)
from autorl_task_alfworld.task import SHIPPED

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("build_games", ROOT / "scripts/build_games.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_files_are_what_the_script_builds() -> None:
    assert _script().main(["--check"]) == 0


def test_check_fails_on_a_changed_file(tmp_path: Path, monkeypatch) -> None:
    script = _script()
    for split, path in SHIPPED.items():
        text = path.read_text(encoding="utf-8")
        if split == "eval":
            text = text.replace("put", "place", 1)
        (tmp_path / path.name).write_text(text, encoding="utf-8")
    monkeypatch.setattr(script, "DATA_DIR", tmp_path)
    assert script.main(["--check"]) == 1


def test_set_is_small_and_covers_the_six_task_types() -> None:
    train, evals = read_records(SHIPPED["train"]), read_records(SHIPPED["eval"])
    assert (len(train), len(evals)) == (120, 40)
    assert sum(p.stat().st_size for p in SHIPPED.values()) < 2_000_000
    for records in (train, evals):
        assert set(Counter(r.task_type for r in records)) == set(TASK_TYPES)


def test_train_and_eval_are_disjoint() -> None:
    train, evals = read_records(SHIPPED["train"]), read_records(SHIPPED["eval"])
    assert not {r.id for r in train} & {r.id for r in evals}
    assert {r.layout for r in train} <= set(TRAIN_LAYOUTS)
    assert {r.layout for r in evals} <= set(EVAL_LAYOUTS)
    assert not set(TRAIN_LAYOUTS) & set(EVAL_LAYOUTS)
    assert not {goal_key(r) for r in train} & {goal_key(r) for r in evals}
    train_text = "\n".join(r.goal + "\n" + r.pddl_problem for r in train)
    for record in evals:
        assert record.goal not in train_text
    assert not RESERVED_GOALS & {goal_key(r) for r in train + evals}


def test_goals_come_from_the_goal_library() -> None:
    starts = ("put ", "clean some", "heat some", "cool some", "find two", "look at", "examine the")
    for record in read_records(SHIPPED["train"]) + read_records(SHIPPED["eval"]):
        assert record.goal.startswith(starts), record.goal
        assert "(:goal" in record.pddl_problem and "UNKNOWN" not in record.goal
