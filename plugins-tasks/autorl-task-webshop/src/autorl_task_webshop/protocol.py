"""What the rollout evaluator imports (from the installed package, never the workspace copy).

Contract A of the ``rollout`` evaluator (docs/evaluators/rollout.md):
``load_sessions(eval_path)`` gives the eval session ids, ``make_env(config, eval_path)`` a fresh
environment over the eval goals (one per concurrent episode; the shop and its BM25 index are
built once per catalogue and shared), ``build_messages``/``extract_action`` the prompt and the
action parsing. ``ENV_OPTIONS`` names the ``evaluator_config`` keys ``make_env`` reads.
``load_shop(catalog_path)`` and ``SUCCESS_THRESHOLD`` stay for other callers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl_task_webshop.catalog import Goal, load_goals, load_products
from autorl_task_webshop.env import DEFAULT_MAX_STEPS, WebShopEnv, parse_action
from autorl_task_webshop.prompt import HISTORY_WINDOW, build_messages, extract_action
from autorl_task_webshop.reward import SUCCESS_THRESHOLD
from autorl_task_webshop.search import Shop

__all__ = [
    "DEFAULT_MAX_STEPS",
    "ENV_OPTIONS",
    "HISTORY_WINDOW",
    "SUCCESS_THRESHOLD",
    "EvalEnv",
    "WebShopEnv",
    "build_messages",
    "extract_action",
    "load_sessions",
    "load_shop",
    "make_env",
    "parse_action",
]

SHIPPED_CATALOG = Path(__file__).resolve().parent / "data" / "catalog.json"
ENV_OPTIONS = {
    "catalog_path": "the catalogue JSON the sessions shop in (default: the shipped one)",
    "max_steps": f"steps per session before it ends unbought ({DEFAULT_MAX_STEPS})",
    "success_threshold": f"reward at or above which a purchase is a success ({SUCCESS_THRESHOLD})",
}


def load_shop(catalog_path: str | os.PathLike[str]) -> Shop:
    """A shop over ``catalog_path``, shared by every caller in this process."""
    return _cached_shop(str(Path(catalog_path).resolve()))


@lru_cache(maxsize=4)
def _cached_shop(catalog_path: str) -> Shop:
    return Shop(load_products(catalog_path))


@lru_cache(maxsize=8)
def _cached_goals(eval_path: str, mtime_ns: int) -> tuple[Goal, ...]:
    return tuple(load_goals(eval_path))


def _goals(eval_path: str | os.PathLike[str]) -> tuple[Goal, ...]:
    path = Path(eval_path).resolve()
    return _cached_goals(str(path), path.stat().st_mtime_ns)


def load_sessions(eval_path: str | os.PathLike[str]) -> list[str]:
    """The eval session ids, in file order."""
    return [goal.session_id for goal in _goals(eval_path)]


class EvalEnv(WebShopEnv):
    """The WebShop env whose finished episodes always say ``info["success"]`` (a purchase with a
    reward of at least ``success_threshold``; running out of steps is a failure)."""

    def __init__(
        self,
        shop: Shop,
        goals: Any,
        max_steps: int = DEFAULT_MAX_STEPS,
        success_threshold: float = SUCCESS_THRESHOLD,
    ) -> None:
        super().__init__(shop, goals, max_steps=max_steps)
        self.success_threshold = success_threshold

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        observation, reward, done, info = super().step(action)
        if done:
            info["success"] = "purchased" in info and reward >= self.success_threshold
        return observation, reward, done, info


def _option(config: Mapping[str, Any], key: str, default: Any) -> Any:
    value = config.get(key, default)
    return default if value is None else value


def make_env(config: Mapping[str, Any], eval_path: str | os.PathLike[str]) -> EvalEnv:
    """A fresh environment over the eval goals of ``eval_path`` (the shop is shared)."""
    max_steps = _option(config, "max_steps", DEFAULT_MAX_STEPS)
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ConfigError(
            f"webshop: max_steps={max_steps!r} must be a positive integer",
            hint=f"the reference protocol uses {DEFAULT_MAX_STEPS}",
        )
    threshold = _option(config, "success_threshold", SUCCESS_THRESHOLD)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ConfigError(
            f"webshop: success_threshold={threshold!r} must be a number in [0, 1]",
            hint=f"the reference protocol uses {SUCCESS_THRESHOLD}",
        )
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(
            f"webshop: success_threshold={threshold!r} must be a number in [0, 1]",
            hint=f"the reference protocol uses {SUCCESS_THRESHOLD}",
        )
    catalog = Path(_option(config, "catalog_path", SHIPPED_CATALOG))
    if not catalog.is_file():
        raise ConfigError(
            f"webshop: catalog_path {catalog} is not a file",
            hint="autorl prepare rebuilds the task cache; or drop catalog_path to use the "
            "shipped catalogue",
        )
    return EvalEnv(load_shop(catalog), _goals(eval_path), max_steps, float(threshold))
