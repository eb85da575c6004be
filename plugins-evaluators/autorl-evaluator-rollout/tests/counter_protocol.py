"""A protocol module for tests (contract A) whose environment is trivial: count up to a target.

A session ``{"session_id": "c0", "target": 2}`` starts at ``count=0``; ``inc`` adds one,
``stop`` ends the episode (success when the count equals the target). Anything else is an
invalid action that still uses a step; after ``max_steps`` steps the episode ends unsuccessful.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ENV_OPTIONS = {"max_steps": "steps before the episode ends (8)", "tag": "free text, echoed"}
ACTION_RE = re.compile(r"\b(inc|stop)\b")
MADE: list[Mapping[str, Any]] = []
"""The config of every environment made (tests read it)."""


def load_sessions(eval_path: Path) -> list[str]:
    return [json.loads(line)["session_id"] for line in Path(eval_path).read_text().splitlines()]


def _targets(eval_path: Path) -> dict[str, int]:
    rows = [json.loads(line) for line in Path(eval_path).read_text().splitlines()]
    return {row["session_id"]: int(row["target"]) for row in rows}


class CounterEnv:
    def __init__(self, targets: dict[str, int], max_steps: int) -> None:
        self.targets, self.max_steps = targets, max_steps
        self.count = self.steps = self.target = 0

    def _obs(self) -> str:
        return f"count={self.count} target={self.target}"

    def reset(self, session_id: str) -> tuple[str, dict[str, Any]]:
        self.target = self.targets[session_id]  # KeyError for an unknown session
        self.count = self.steps = 0
        return self._obs(), {}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        self.steps += 1
        info: dict[str, Any] = {"valid": action in ("inc", "stop"), "count": self.count}
        if action == "stop":
            success = self.count == self.target
            info.update(success=success)
            return "stopped", 1.0 if success else 0.0, True, info
        if action == "inc":
            self.count += 1
            info["count"] = self.count
        obs = self._obs() if info["valid"] else f"Invalid action {action!r}. {self._obs()}"
        if self.steps >= self.max_steps:
            info.update(success=False, truncated=True)
            return obs, 0.0, True, info
        return obs, 0.0, False, info


def make_env(config: Mapping[str, Any], eval_path: Path) -> CounterEnv:
    MADE.append(dict(config))
    return CounterEnv(_targets(eval_path), int(config.get("max_steps", 8)))


def build_messages(
    observations: Sequence[str], actions: Sequence[str], history_window: int
) -> list[dict[str, str]]:
    assert len(observations) == len(actions) + 1
    messages = [{"role": "user", "content": observations[0]}]
    for action, observation in zip(actions, observations[1:], strict=True):
        messages += [
            {"role": "assistant", "content": action},
            {"role": "user", "content": observation},
        ]
    return messages


def extract_action(reply: str) -> str | None:
    match = ACTION_RE.search(reply)
    return match.group(1) if match else None


def episode_metrics(info: dict[str, Any]) -> dict[str, float]:
    return {"final_count": float(info.get("count", 0))}


def write_sessions(path: Path, targets: Sequence[int]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({"session_id": f"c{i}", "target": t}) + "\n" for i, t in enumerate(targets)
        )
    )
    return path
