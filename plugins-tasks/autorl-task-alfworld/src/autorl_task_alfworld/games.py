"""Game records and their files in the layout the ALFWorld engine reads.

A record holds one game compactly (its PDDL problem, goal text and the ``pddl_params`` the
hand-coded expert reads). :func:`materialize` writes it as ALFWorld lays games out: a folder
with ``game.tw-pddl`` (JSON: PDDL domain, grammar with the goal text, problem) and
``traj_data.json`` (task type and ``pddl_params``). Standard library only: this module is also
copied into the workspace kit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

GAME_FILE = "game.tw-pddl"
TRAJ_FILE = "traj_data.json"
UNKNOWN_GOAL = "UNKNOWN GOAL"
"""The placeholder of ``alfred.twl2`` that ALFWorld replaces with the goal text."""


@dataclass(frozen=True)
class GameRecord:
    id: str
    task_type: str
    goal: str
    layout: str
    pddl_params: dict[str, Any] = field(default_factory=dict)
    pddl_problem: str = ""

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> GameRecord:
        return cls(**{k: row[k] for k in cls.__dataclass_fields__ if k in row})


def read_records(path: str | os.PathLike[str]) -> list[GameRecord]:
    with open(path, encoding="utf-8") as fh:
        return [GameRecord.from_dict(json.loads(line)) for line in fh if line.strip()]


def dumps_records(records: Iterable[GameRecord]) -> str:
    return "".join(
        json.dumps(asdict(r), ensure_ascii=False, sort_keys=True) + "\n" for r in records
    )


def write_records(path: str | os.PathLike[str], records: Iterable[GameRecord]) -> None:
    Path(path).write_text(dumps_records(records), encoding="utf-8")


def engine_logic() -> tuple[str, str]:
    """The PDDL domain and the grammar template shipped inside the ``alfworld`` package."""
    import alfworld

    data = Path(alfworld.__file__).resolve().parent / "data"
    return (data / "alfred.pddl").read_text(encoding="utf-8"), (data / "alfred.twl2").read_text(
        encoding="utf-8"
    )


def materialize(record: GameRecord, target: Path, domain: str, grammar: str) -> Path:
    """Write ``target/game.tw-pddl`` and ``target/traj_data.json``; returns the game file."""
    target.mkdir(parents=True, exist_ok=True)
    game = {
        "pddl_domain": domain,
        "grammar": grammar.replace(UNKNOWN_GOAL, record.goal),
        "pddl_problem": record.pddl_problem,
        "solvable": True,
    }
    traj = {"task_type": record.task_type, "pddl_params": record.pddl_params}
    (target / GAME_FILE).write_text(json.dumps(game), encoding="utf-8")
    (target / TRAJ_FILE).write_text(json.dumps(traj), encoding="utf-8")
    return target / GAME_FILE
