"""The rollout evaluator's protocol with the reference's own prompt (task option
``prompt = "reference"``).

As RD-Agent's ``autorl_bench`` ALFWorld evaluator plays a game (``benchmarks/alfworld/eval.py``,
the ReAct paper's loop): a raw-text prompt, no chat template (``build_messages`` returns a
``str``: :func:`autorl_task_alfworld.prompt.build_reference_prompt`), the two examples of the
game's task type, the whole history; generation stops at the first newline
(:data:`STOP`), 100 new tokens, greedy (the task's evaluator config); the action is the reply
stripped (:func:`extract_action`); the environment plays verbatim (``think:`` answers ``OK.``,
observations cleaned by ``process_ob``).

The prompt depends on the game: ``make_env`` reads the examples file (``react_prompts``, its
digest checked against ``react_prompts_sha256`` when given) and each ``reset`` returns, in its
info, the game's ``task_type`` and ``prompt_prefix``; the rollout evaluator hands that info to
``build_messages`` (its ``info`` parameter).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autorl_task_alfworld.env import DEFAULT_MAX_STEPS, AlfWorldEnv
from autorl_task_alfworld.prompt import (
    STOP,
    build_reference_prompt,
    load_react_prompts,
    reference_action,
    reference_prefix,
)
from autorl_task_alfworld.protocol import _rows, episode_metrics, game_files, load_sessions

__all__ = [
    "DEFAULT_MAX_STEPS",
    "ENV_OPTIONS",
    "HISTORY_WINDOW",
    "STOP",
    "ReferenceEnv",
    "build_messages",
    "episode_metrics",
    "extract_action",
    "load_sessions",
    "make_env",
]

ENV_OPTIONS = {
    "max_steps": "steps per game before it ends unsolved (50)",
    "react_prompts": "the ReAct examples file (alfworld_3prompts.json of ysymyth/ReAct)",
    "react_prompts_sha256": "its SHA-256, checked when the environment is made (optional)",
}
"""The ``evaluator_config`` keys ``make_env`` reads (the rollout evaluator checks them)."""
HISTORY_WINDOW = DEFAULT_MAX_STEPS
"""Unused: the reference's prompt holds the whole history."""


def file_sha256(path: str | os.PathLike[str]) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class ReferenceEnv:
    """A verbatim :class:`AlfWorldEnv` whose ``reset`` info also holds the game's ``task_type``
    and ``prompt_prefix`` (the instruction and the two examples of that task type)."""

    def __init__(
        self,
        games: Mapping[str, str | Path],
        task_types: Mapping[str, str],
        examples: Mapping[str, str],
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> None:
        self.env = AlfWorldEnv(games, max_steps=max_steps, verbatim=True)
        self.task_types = dict(task_types)
        self.examples = dict(examples)
        self.session_ids = self.env.session_ids
        self.max_steps = max_steps

    def reset(self, session_id: str) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(session_id)
        task_type = self.task_types[session_id]
        prefix = reference_prefix(self.examples, task_type)
        return observation, {**info, "task_type": task_type, "prompt_prefix": prefix}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        return self.env.step(action)

    def close(self) -> None:
        self.env.close()


def make_env(config: Mapping[str, Any], eval_path: str | os.PathLike[str]) -> ReferenceEnv:
    """An environment over the eval games with the examples of ``config["react_prompts"]``.

    A missing or incomplete examples file, or one whose digest is not
    ``config["react_prompts_sha256"]``, raises ValueError (the task refuses it before a run).
    """
    path = config.get("react_prompts")
    if not path:
        raise ValueError("the reference prompt needs config['react_prompts'] (the examples file)")
    try:
        examples = load_react_prompts(path)
    except OSError as exc:
        raise ValueError(f"cannot read the ReAct examples file {path}: {exc}") from None
    expected = config.get("react_prompts_sha256")
    if expected and file_sha256(path) != expected:
        raise ValueError(f"{path} changed since the task was prepared (SHA-256 differs)")
    task_types = {row["session_id"]: row["task_type"] for row in _rows(eval_path)}
    max_steps = int(config.get("max_steps", DEFAULT_MAX_STEPS))
    return ReferenceEnv(game_files(eval_path), task_types, examples, max_steps=max_steps)


def build_messages(
    observations: Sequence[str],
    actions: Sequence[str],
    history_window: int = HISTORY_WINDOW,
    info: Mapping[str, Any] | None = None,
) -> str:
    """The raw-text prompt before the next action; ``info`` is the episode's reset info (it
    holds ``prompt_prefix``). ``history_window`` is ignored: the whole history is sent."""
    if info is None or "prompt_prefix" not in info:
        raise ValueError("the reference prompt needs the reset info's prompt_prefix (info=...)")
    return build_reference_prompt(str(info["prompt_prefix"]), observations, actions)


def extract_action(reply: str) -> str | None:
    """The reply stripped, as it is; None when empty (then the empty action is sent)."""
    return reference_action(reply)
