"""WebShop workspace kit (copied as ``workspace/kit/autorl_kit.py``): the shop on TRAIN goals only.

Next to this file the task puts ``webshop_env/`` (the environment's modules: the same files the
grader imports from the installed package) and ``webshop_data/`` (the catalogue and the train
goals; the eval goals are not there, so ``make_env().reset(<eval id>)`` fails with KeyError).

    import sys; sys.path.insert(0, "kit")
    import autorl_kit as kit
    env = kit.make_env()
    obs, info = env.reset(env.session_ids[0])
    obs, reward, done, info = env.step("search[non slip running shoes]")

Needs ``rank_bm25`` (pip install rank_bm25) for the search index; the rest is standard library.
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

KIT_DIR = Path(__file__).resolve().parent
if str(KIT_DIR) not in sys.path:
    sys.path.insert(0, str(KIT_DIR))

from autorl_task_common.react import play_expert  # noqa: E402
from webshop_env.catalog import Goal, Product, load_goals, load_products  # noqa: E402
from webshop_env.env import DEFAULT_MAX_STEPS, WebShopEnv, parse_action  # noqa: E402
from webshop_env.expert import expert_actions as _expert_actions  # noqa: E402
from webshop_env.prompt import action_extractor, messages_builder  # noqa: E402
from webshop_env.reward import SUCCESS_THRESHOLD, compute_reward  # noqa: E402
from webshop_env.search import Shop  # noqa: E402

DATA_DIR = KIT_DIR / "webshop_data"
SETTINGS: dict[str, Any] = {"prompt": "react", "max_steps": DEFAULT_MAX_STEPS, "history_window": 4}
if (DATA_DIR / "settings.json").is_file():
    SETTINGS.update(json.loads((DATA_DIR / "settings.json").read_text(encoding="utf-8")))
PROMPT_STYLE: str = SETTINGS["prompt"]
"""The grader's prompt style for this run (``compact``, ``react`` or ``reference``)."""
MAX_STEPS: int = SETTINGS["max_steps"]
"""The grader's step limit for this run."""
HISTORY_WINDOW: int = SETTINGS["history_window"]
build_messages = messages_builder(PROMPT_STYLE)
"""The grader's prompt: ``build_messages(observations, actions, HISTORY_WINDOW)``."""
extract_action = action_extractor(PROMPT_STYLE)
"""The grader's reading of a reply: the action it sends, or None (then the reply's first line
is sent and the environment says why it is invalid)."""

__all__ = [
    "HISTORY_WINDOW",
    "MAX_STEPS",
    "PROMPT_STYLE",
    "SUCCESS_THRESHOLD",
    "Goal",
    "Product",
    "Shop",
    "WebShopEnv",
    "build_messages",
    "compute_reward",
    "expert_actions",
    "expert_episode",
    "extract_action",
    "load_shop",
    "load_train",
    "make_env",
    "parse_action",
    "train_ids",
]


@lru_cache(maxsize=1)
def load_shop() -> Shop:
    """The catalogue with its BM25 index (built once per process, ~0.4 s)."""
    return Shop(load_products(DATA_DIR / "catalog.json"))


def load_train() -> list[Goal]:
    """The train goals: instruction, target product id, attributes, options, price bound."""
    return load_goals(DATA_DIR / "goals_train.json")


@lru_cache(maxsize=1)
def _train_by_id() -> dict[str, Goal]:
    return {goal.session_id: goal for goal in load_train()}


def train_ids() -> list[str]:
    """The train session ids (the only sessions this kit's environments know)."""
    return list(_train_by_id())


def make_env(max_steps: int | None = None) -> WebShopEnv:
    """An environment over the train goals (``env.session_ids``); default: the grader's limit."""
    return WebShopEnv(load_shop(), load_train(), max_steps=max_steps or MAX_STEPS)


def expert_actions(goal: Goal | str) -> list[str]:
    """A scripted action sequence that buys ``goal``'s target with the wanted options."""
    if isinstance(goal, str):
        goal = _train_by_id()[goal]
    return _expert_actions(goal, load_shop())


def expert_episode(
    goal: Goal | str, env: WebShopEnv | None = None, history_window: int | None = None
) -> dict[str, Any]:
    """Play the expert on ``goal`` (a train goal or its session id): SFT data in the grader's
    prompt format.

    ``{"session_id", "reward", "success", "steps": [{"messages": [...], "action": "..."}]}``:
    each step's ``messages`` is exactly what the evaluator would send before that action.
    """
    if isinstance(goal, str):
        goal = _train_by_id()[goal]
    env = env or make_env()
    window = HISTORY_WINDOW if history_window is None else history_window
    return play_expert(env, goal.session_id, expert_actions(goal), build_messages, window)
