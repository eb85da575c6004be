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

import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

KIT_DIR = Path(__file__).resolve().parent
if str(KIT_DIR) not in sys.path:
    sys.path.insert(0, str(KIT_DIR))

from webshop_env.catalog import Goal, Product, load_goals, load_products  # noqa: E402
from webshop_env.env import DEFAULT_MAX_STEPS, WebShopEnv, parse_action  # noqa: E402
from webshop_env.expert import expert_actions as _expert_actions  # noqa: E402
from webshop_env.prompt import HISTORY_WINDOW, build_messages, extract_action  # noqa: E402
from webshop_env.reward import SUCCESS_THRESHOLD, compute_reward  # noqa: E402
from webshop_env.search import Shop  # noqa: E402

DATA_DIR = KIT_DIR / "webshop_data"

__all__ = [
    "HISTORY_WINDOW",
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
]


@lru_cache(maxsize=1)
def load_shop() -> Shop:
    """The catalogue with its BM25 index (built once per process, ~0.4 s)."""
    return Shop(load_products(DATA_DIR / "catalog.json"))


def load_train() -> list[Goal]:
    """The train goals: instruction, target product id, attributes, options, price bound."""
    return load_goals(DATA_DIR / "goals_train.json")


def make_env(max_steps: int = DEFAULT_MAX_STEPS) -> WebShopEnv:
    """An environment over the train goals (``env.session_ids``), the evaluator's step limit."""
    return WebShopEnv(load_shop(), load_train(), max_steps=max_steps)


def expert_actions(goal: Goal) -> list[str]:
    """A scripted action sequence that buys ``goal``'s target with the wanted options."""
    return _expert_actions(goal, load_shop())


def expert_episode(
    goal: Goal, env: WebShopEnv | None = None, history_window: int = HISTORY_WINDOW
) -> dict[str, Any]:
    """Play the expert on ``goal`` and return SFT data in the evaluator's prompt format.

    ``{"session_id", "reward", "steps": [{"messages": [...], "action": "..."}]}``: each step's
    ``messages`` is exactly what the evaluator would send before that action.
    """
    env = env or make_env()
    observation, _ = env.reset(goal.session_id)
    observations, actions, steps = [observation], [], []
    reward = 0.0
    for action in expert_actions(goal):
        steps.append(
            {"messages": build_messages(observations, actions, history_window), "action": action}
        )
        observation, reward, done, _ = env.step(action)
        actions.append(action)
        observations.append(observation)
        if done:
            break
    return {"session_id": goal.session_id, "reward": reward, "steps": steps}
