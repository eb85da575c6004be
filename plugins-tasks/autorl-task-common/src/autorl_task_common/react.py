"""The ReAct chat the rollout evaluator sends for an interactive task, and expert episodes.

Per session the evaluator keeps the observations and the actions so far (one more observation
than actions: the first after ``reset``, then one after each action) and turns them into chat
messages; the model answers with one action. Each task writes its own rules, example and action
syntax; the shapes below are what they share. Standard library only (copied into the kit).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

Messages = list[dict[str, str]]
BuildMessages = Callable[[Sequence[str], Sequence[str], int], Messages]


def check_turns(observations: Sequence[str], actions: Sequence[str]) -> None:
    """Raise ValueError unless there is exactly one more observation than actions."""
    if len(observations) != len(actions) + 1:
        raise ValueError(
            f"build_messages needs one more observation than actions, got {len(observations)} "
            f"observations and {len(actions)} actions"
        )


def react_messages(
    first_user_message: Callable[[str], str],
    observations: Sequence[str],
    actions: Sequence[str],
    history_window: int,
    *,
    short: Callable[[str], str],
    shown: Callable[[str], str] | None = None,
) -> Messages:
    """The first user message (rules, example, first observation), then per action an
    assistant message (``shown(action)``) and a user message ``Observation:\\n...\\nAction:``.
    Observations older than the last ``history_window`` are replaced by ``short(observation)``."""
    check_turns(observations, actions)
    keep_from = max(1, len(observations) - history_window)
    messages = [{"role": "user", "content": first_user_message(observations[0])}]
    for index, action in enumerate(actions, 1):
        messages.append({"role": "assistant", "content": shown(action) if shown else action})
        observation = observations[index]
        text = observation if index >= keep_from else short(observation)
        messages.append({"role": "user", "content": f"Observation:\n{text}\nAction:"})
    return messages


def bracket_action(pattern: re.Pattern[str], reply: str) -> str | None:
    """The first ``verb[argument]`` that ``pattern`` (two groups) finds in a reply, normalised:
    the verb lower case, the argument's white space folded; None if there is none."""
    match = pattern.search(reply)
    if match is None:
        return None
    return f"{match.group(1).lower()}[{' '.join(match.group(2).split())}]"


def play_expert(
    env: Any,
    session_id: str,
    expert: Iterable[str] | Callable[[dict[str, Any]], str | None],
    build_messages: BuildMessages,
    history_window: int,
) -> dict[str, Any]:
    """Play an expert on one session of ``env`` and return it as SFT data.

    ``expert`` is the action sequence, or a function of the last ``info`` giving the next
    action (None or "" to stop). The episode ends when the environment says done or the expert
    stops. Returns ``{"session_id", "reward", "success", "steps": [{"messages", "action"}]}``:
    each step's ``messages`` is exactly what the evaluator would send before that action.
    """
    if callable(expert):
        next_action = expert
    else:
        remaining = iter(expert)

        def next_action(_info: dict[str, Any]) -> str | None:
            return next(remaining, None)

    observation, info = env.reset(session_id)
    observations, actions, steps = [observation], [], []
    reward, done = 0.0, False
    while not done:
        action = next_action(info)
        if not action:
            break
        steps.append(
            {"messages": build_messages(observations, actions, history_window), "action": action}
        )
        observation, reward, done, info = env.step(action)
        actions.append(action)
        observations.append(observation)
    return {
        "session_id": session_id,
        "reward": reward,
        "success": bool(info.get("success", False)),
        "steps": steps,
    }
