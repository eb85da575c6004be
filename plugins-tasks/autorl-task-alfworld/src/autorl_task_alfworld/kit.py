"""ALFWorld workspace kit (copied as ``workspace/kit/autorl_kit.py``): the engine on TRAIN games.

Next to this file the task puts ``alfworld_env/`` (the environment and prompt modules: the same
files the grader imports from the installed package) and ``alfworld_games/`` (the train games in
ALFWorld's layout and ``index.jsonl``; no eval game is there, so ``make_env().reset(<an eval
id>)`` fails with KeyError).

    import sys; sys.path.insert(0, "kit")
    import autorl_kit as kit
    env = kit.make_env()
    obs, info = env.reset(kit.train_ids()[0])
    obs, reward, done, info = env.step("go to countertop 1")
    episode = kit.expert_episode(kit.train_ids()[0])   # SFT data in the evaluator's format
    prompt = kit.grader_prompt(session_id, observations, actions)   # exactly what the grader sends

``PROMPT`` says which prompt the grader uses in this run: ``chat`` (``build_messages``, through
the chat template) or ``reference`` (the ReAct paper's raw text, no chat template; its examples
file is next to this one).

Needs the ``textworld`` and ``alfworld`` packages (the real engine); the rest is standard library.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

KIT_DIR = Path(__file__).resolve().parent
if str(KIT_DIR) not in sys.path:
    sys.path.insert(0, str(KIT_DIR))

from alfworld_env.env import DEFAULT_MAX_STEPS, AlfWorldEnv  # noqa: E402
from alfworld_env.prompt import (  # noqa: E402
    HISTORY_WINDOW as PROMPT_HISTORY_WINDOW,
)
from alfworld_env.prompt import (  # noqa: E402
    REACT_PROMPTS_FILE,
    STOP,
    build_messages,
    build_reference_prompt,
    extract_action,
    load_react_prompts,
    reference_action,
    reference_prefix,
)
from autorl_task_common.react import play_expert  # noqa: E402

GAMES_DIR = KIT_DIR / "alfworld_games"
EXAMPLES_FILE = KIT_DIR / REACT_PROMPTS_FILE
"""The reference prompt's ReAct examples (present when ``PROMPT == "reference"``)."""
GAME_FILE = "game.tw-pddl"
SUCCESS_THRESHOLD = 1.0
"""An episode succeeds when the goal is reached (reward 1.0); the metric is the success rate."""

__all__ = [
    "DEFAULT_MAX_STEPS",
    "HISTORY_WINDOW",
    "PROMPT",
    "STOP",
    "SUCCESS_THRESHOLD",
    "AlfWorldEnv",
    "build_messages",
    "eval_max_steps",
    "expert_episode",
    "extract_action",
    "grader_action",
    "grader_prompt",
    "grader_reply",
    "load_train",
    "make_env",
    "train_ids",
]


def load_train() -> list[dict[str, Any]]:
    """The train games: ``{"session_id", "task_type", "goal"}`` each."""
    with (GAMES_DIR / "index.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def train_ids() -> list[str]:
    return [row["session_id"] for row in load_train()]


def _game_files() -> dict[str, Path]:
    return {row["session_id"]: GAMES_DIR / row["dir"] / GAME_FILE for row in load_train()}


def _grader_config() -> dict[str, Any]:
    config = GAMES_DIR / "config.json"
    return json.loads(config.read_text(encoding="utf-8")) if config.is_file() else {}


def eval_max_steps() -> int:
    """The grader's step limit for this run (the task's ``max_steps`` option, 50 by default)."""
    return int(_grader_config().get("max_steps", DEFAULT_MAX_STEPS))


HISTORY_WINDOW: int = int(_grader_config().get("history_window", PROMPT_HISTORY_WINDOW))
"""The grader's history window for this run (3 on the shipped games, 50 on the official ones)."""
PROMPT: str = str(_grader_config().get("prompt", "chat"))
"""The grader's prompt in this run: ``chat`` or ``reference`` (raw text, no chat template)."""
_EXAMPLES: dict[str, str] = {}


def task_type(session_id: str) -> str:
    """The task type of a train game (``pick_heat_then_place_in_recep``...)."""
    for row in load_train():
        if row["session_id"] == session_id:
            return str(row["task_type"])
    raise KeyError(session_id)


def grader_prompt(
    session_id: str, observations: list[str], actions: list[str]
) -> list[dict[str, str]] | str:
    """Exactly what the grader sends before the next action of this game: chat messages
    (``PROMPT == "chat"``) or, with the reference prompt, the raw text to continue (the two
    ReAct examples of the game's task type, then the whole history)."""
    if PROMPT != "reference":
        return build_messages(observations, actions, HISTORY_WINDOW)
    if not _EXAMPLES:
        _EXAMPLES.update(load_react_prompts(EXAMPLES_FILE))
    prefix = reference_prefix(_EXAMPLES, task_type(session_id))
    return build_reference_prompt(prefix, observations, actions)


def grader_reply(action: str) -> str:
    """The reply that takes ``action``: with the reference prompt, what follows its ``>`` up to
    the newline the grader stops at (``" <action>\\n"``, as its history writes each action);
    in chat, the action itself."""
    return f" {action}\n" if PROMPT == "reference" else action


def grader_action(reply: str) -> str | None:
    """The action the grader reads from a reply (None: unparseable, the reply is sent as is)."""
    return reference_action(reply) if PROMPT == "reference" else extract_action(reply)


def make_env(max_steps: int | None = None, expert: bool = False) -> AlfWorldEnv:
    """An environment over the train games (``env.session_ids``); ``max_steps`` defaults to
    the grader's step limit. With ``expert=True`` each info dict also holds ``expert_action``
    (ALFWorld's hand-coded expert's next action)."""
    steps = eval_max_steps() if max_steps is None else max_steps
    verbatim = PROMPT == "reference"  # the reference's loop: actions and observations as they are
    return AlfWorldEnv(_game_files(), max_steps=steps, expert=expert, verbatim=verbatim)


def expert_episode(
    session_id: str,
    env: AlfWorldEnv | None = None,
    history_window: int = HISTORY_WINDOW,
    max_steps: int | None = None,
) -> dict[str, Any]:
    """Play ALFWorld's hand-coded expert on a train game and return SFT data.

    ``{"session_id", "reward", "success", "steps": [{"messages", "prompt", "action"}]}``:
    each step's ``prompt`` is exactly what the evaluator would send before that action
    (:func:`grader_prompt`); ``messages`` the chat prompt (the same as ``prompt`` when
    ``PROMPT == "chat"``).
    """
    if env is None or not env.expert:
        # the expert plays to the end (50 steps), even when the grader's limit is lower: the
        # prompt of each step does not depend on the limit
        env = make_env(max_steps=max_steps or DEFAULT_MAX_STEPS, expert=True)
    prompts: list[Any] = []

    def build(observations: Any, actions: Any, window: int) -> list[dict[str, str]]:
        prompts.append(grader_prompt(session_id, list(observations), list(actions)))
        return build_messages(observations, actions, window)

    # ALFWorld's hand-coded expert: each info holds its next action
    episode = play_expert(
        env, session_id, lambda info: info["expert_action"], build, history_window
    )
    for step, prompt in zip(episode["steps"], prompts, strict=True):
        step["prompt"] = prompt
    return episode
