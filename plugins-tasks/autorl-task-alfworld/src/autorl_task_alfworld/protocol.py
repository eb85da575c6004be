"""What the ``rollout`` evaluator imports (from the installed package, never the workspace copy).

``load_sessions(eval_path)`` gives the eval session ids in order; ``make_env(config, eval_path)``
a fresh environment able to reset to any of them (call it once per concurrent episode slot);
``build_messages``/``extract_action`` the ReAct prompt and the action parsing. ``eval.jsonl``
rows name their game file (relative to ``eval.jsonl``'s folder for the shipped games, absolute
for the official ones).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autorl_task_alfworld.env import DEFAULT_MAX_STEPS, AlfWorldEnv
from autorl_task_alfworld.prompt import HISTORY_WINDOW, STOP, build_messages, extract_action

__all__ = [
    "DEFAULT_MAX_STEPS",
    "ENV_OPTIONS",
    "HISTORY_WINDOW",
    "STOP",
    "AlfWorldEnv",
    "build_messages",
    "episode_metrics",
    "extract_action",
    "load_sessions",
    "make_env",
]


ENV_OPTIONS = {"max_steps": "steps per game before it ends unsolved (50)"}
"""The ``evaluator_config`` keys ``make_env`` reads (the rollout evaluator checks them)."""


def _rows(eval_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    with open(eval_path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_sessions(eval_path: str | os.PathLike[str]) -> list[str]:
    return [row["session_id"] for row in _rows(eval_path)]


def game_files(eval_path: str | os.PathLike[str]) -> dict[str, Path]:
    base = Path(eval_path).resolve().parent
    return {row["session_id"]: base / row["game_file"] for row in _rows(eval_path)}


def make_env(config: Mapping[str, Any], eval_path: str | os.PathLike[str]) -> AlfWorldEnv:
    """An environment over the eval games, ending episodes after ``config["max_steps"]``."""
    max_steps = int(config.get("max_steps", DEFAULT_MAX_STEPS))
    return AlfWorldEnv(game_files(eval_path), max_steps=max_steps)


def episode_metrics(info: Mapping[str, Any]) -> dict[str, float]:
    """Steps used by the episode (a success in fewer steps is a better policy)."""
    return {"steps": float(info.get("steps", 0))}
