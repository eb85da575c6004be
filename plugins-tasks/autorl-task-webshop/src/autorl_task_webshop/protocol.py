"""What the rollout evaluator imports (from the installed package, never the workspace copy).

``load_sessions(eval_path)`` gives the eval goals, ``load_shop(catalog_path)`` the shared shop,
``WebShopEnv(shop, goals, max_steps)`` one session each, ``build_messages``/``extract_action`` the
prompt and the action parsing; ``SUCCESS_THRESHOLD`` turns a reward into a success.
"""

from __future__ import annotations

import os

from autorl_task_webshop.catalog import Goal, load_goals, load_products
from autorl_task_webshop.env import DEFAULT_MAX_STEPS, WebShopEnv, parse_action
from autorl_task_webshop.prompt import HISTORY_WINDOW, build_messages, extract_action
from autorl_task_webshop.reward import SUCCESS_THRESHOLD
from autorl_task_webshop.search import Shop

__all__ = [
    "DEFAULT_MAX_STEPS",
    "HISTORY_WINDOW",
    "SUCCESS_THRESHOLD",
    "WebShopEnv",
    "build_messages",
    "extract_action",
    "load_sessions",
    "load_shop",
    "parse_action",
]


def load_shop(catalog_path: str | os.PathLike[str]) -> Shop:
    return Shop(load_products(catalog_path))


def load_sessions(eval_path: str | os.PathLike[str]) -> list[Goal]:
    return load_goals(eval_path)
