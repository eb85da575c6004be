"""The counter protocol (:mod:`counter_protocol`) with a raw-text prompt (a ``str``, no chat
template) that depends on the session: ``build_messages`` takes the reset ``info``, whose
``intro`` line names the target."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from counter_protocol import CounterEnv, _targets, episode_metrics, extract_action, load_sessions

__all__ = ["build_messages", "episode_metrics", "extract_action", "load_sessions", "make_env"]

ENV_OPTIONS = {"max_steps": "steps before the episode ends (8)"}
STOP = ("\n",)
BUILT: list[Any] = []
"""Every prompt built (tests read it)."""


class IntroEnv(CounterEnv):
    def reset(self, session_id: str) -> tuple[str, dict[str, Any]]:
        observation, info = super().reset(session_id)
        return observation, {**info, "intro": f"Count to {self.target}, then stop."}


def make_env(config: Mapping[str, Any], eval_path: Path) -> IntroEnv:
    return IntroEnv(_targets(eval_path), int(config.get("max_steps", 8)))


def build_messages(
    observations: Sequence[str],
    actions: Sequence[str],
    history_window: int,
    info: Mapping[str, Any] | None = None,
) -> str:
    assert info is not None and len(observations) == len(actions) + 1
    history = "".join(f" {a}\n{o}\n>" for a, o in zip(actions, observations[1:], strict=True))
    prompt = f"{info['intro']}\n{observations[0]}\n>{history}"
    BUILT.append(prompt)
    return prompt
