"""The official ALFWorld game files (an ``alfworld-download`` directory, ``$ALFWORLD_DATA``).

Layout, as ``alfworld-download`` writes it::

    <data_path>/json_2.1.1/train/<task>-<obj>-<mrecep>-<parent>-<scene>/<trial>/
        traj_data.json  game.tw-pddl  initial_state.pddl
    <data_path>/json_2.1.1/valid_unseen/...   (the 134 games of the reference protocol)

Games are collected as ALFWorld's ``AlfredTWEnv.collect_game_files`` does: a ``traj_data.json``
of one of the six task types, no ``movable``/``Sliced`` variant, a ``game.tw-pddl`` marked
solvable. The session id is the game folder relative to ``json_2.1.1`` (``valid_unseen/...``).

The reference prompt's examples are not in that download: :func:`fetch_react_prompts` gets the
ReAct repository's ``prompts/alfworld_3prompts.json`` (the file RD-Agent's ``autorl_bench``
ships as ``react_prompts.json``, byte for byte) and checks its SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from pathlib import Path
from typing import Any

from autorl_task_alfworld.games import GAME_FILE, TRAJ_FILE
from autorl_task_alfworld.generate import TASK_TYPES

JSON_DIR = "json_2.1.1"
TRAIN_SPLIT = "train"
EVAL_SPLIT = "valid_unseen"
REFERENCE_EVAL_SIZE = 134
GOAL_MARK = "Your task is to: "
REACT_PROMPTS_URL = (
    "https://raw.githubusercontent.com/ysymyth/ReAct/master/prompts/alfworld_3prompts.json"
)
REACT_PROMPTS_SHA256 = "a10976b4ae99f4802aa9e621933bb71065ae103f2bd273a24466ab1005fbc45a"
"""Of ysymyth/ReAct's file at commit 6bdb3a1 (2023-07-14), the same as RD-Agent's
``benchmarks/alfworld/react_prompts.json`` at commit 471eb30 (2026-03-19)."""


def fetch_react_prompts(target: Path, url: str | None = None, timeout: float = 60) -> Path:
    """Download the ReAct examples file to ``target``, checked against
    :data:`REACT_PROMPTS_SHA256`; written only when complete and right. Raises OSError when the
    host cannot be reached, ValueError when the bytes are not the expected file."""
    url = url or REACT_PROMPTS_URL
    with urllib.request.urlopen(url, timeout=timeout) as response:
        data = response.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != REACT_PROMPTS_SHA256:
        raise ValueError(
            f"{url} gave {len(data)} bytes with SHA-256 {digest[:12]}..., not the expected "
            f"{REACT_PROMPTS_SHA256[:12]}..."
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def missing_parts(data_path: Path) -> list[str]:
    """The folders of the official layout that ``data_path`` lacks (empty if complete)."""
    return [
        f"{JSON_DIR}/{split}"
        for split in (TRAIN_SPLIT, EVAL_SPLIT)
        if not (data_path / JSON_DIR / split).is_dir()
    ]


def goal_of(game: dict[str, Any]) -> str:
    """The goal text the game's grammar says after ``Your task is to:``."""
    grammar = str(game.get("grammar", ""))
    start = grammar.find(GOAL_MARK)
    if start < 0:
        return ""
    text = grammar[start + len(GOAL_MARK) :]
    end = min(
        (i for i in (text.find('"'), text.find("\\n"), text.find("\n")) if i >= 0),
        default=len(text),
    )
    return text[:end].strip().rstrip(".")


def collect(data_path: Path, split: str) -> list[dict[str, Any]]:
    """``[{session_id, task_type, goal, game_dir}]`` of one split, sorted by session id."""
    root = data_path / JSON_DIR
    rows = []
    for folder, _dirs, files in os.walk(root / split):
        if TRAJ_FILE not in files or GAME_FILE not in files:
            continue
        if "movable" in folder or "Sliced" in folder:
            continue
        game_dir = Path(folder)
        traj = json.loads((game_dir / TRAJ_FILE).read_text(encoding="utf-8"))
        if traj.get("task_type") not in TASK_TYPES:
            continue
        game = json.loads((game_dir / GAME_FILE).read_text(encoding="utf-8"))
        if not game.get("solvable", False):
            continue
        rows.append(
            {
                "session_id": game_dir.relative_to(root).as_posix(),
                "task_type": traj["task_type"],
                "goal": goal_of(game),
                "game_dir": game_dir,
                "pddl_params": traj.get("pddl_params", {}),
            }
        )
    return sorted(rows, key=lambda row: row["session_id"])
