"""A text WebShop environment: search, results, item pages and purchase, with the WebShop reward.

Gym-like and single-session: ``obs, info = env.reset(session_id)`` then
``obs, reward, done, info = env.step("search[blue running shoes]")``. Many environments can share
one :class:`~.search.Shop` (catalogue + index), so a batched evaluator steps N sessions in
lockstep by holding N ``WebShopEnv`` objects.

Pages and their actions (case-insensitive, one per step):

* ``search``: the instruction and a search box: ``search[<query>]``.
* ``results``: ten products per page (up to 50 results): ``click[<product id or title>]``,
  ``click[next >]``, ``click[< prev]``, ``click[back to search]``.
* ``item``: title, price, attributes and option groups: ``click[<option value>]``,
  ``click[description]``, ``click[features]``, ``click[< prev]`` (the results),
  ``click[back to search]``, ``click[buy now]`` (ends the episode with the reward).
* ``description`` / ``features``: the text, ``click[< prev]`` back to the item.

An action that does not fit the page changes nothing and says why; it still uses a step. After
``max_steps`` steps without a purchase the episode ends with reward 0.
Standard library only apart from the shop's index (copied into the workspace kit).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .catalog import Goal, Product
from .reward import SUCCESS_THRESHOLD, RewardParts, compute_reward
from .search import Shop

DEFAULT_MAX_STEPS = 50
PAGE_SIZE = 10
ACTION_RE = re.compile(r"^\s*(search|click)\s*\[(.*)\]\s*$", re.IGNORECASE | re.DOTALL)

BACK_TO_SEARCH = "back to search"
NEXT_PAGE = "next >"
PREV_PAGE = "< prev"
BUY_NOW = "buy now"
DESCRIPTION = "description"
FEATURES = "features"


def parse_action(text: str) -> tuple[str, str] | None:
    """``("search"|"click", argument)`` of an action string, or None when it is malformed."""
    match = ACTION_RE.match(text)
    if match is None:
        return None
    return match.group(1).lower(), " ".join(match.group(2).split())


@dataclass
class _Session:
    goal: Goal
    page: str = "search"
    query: str = ""
    results: list[Product] = field(default_factory=list)
    page_number: int = 1
    product: Product | None = None
    chosen: dict[str, str] = field(default_factory=dict)
    steps: int = 0
    done: bool = False
    reward: float = 0.0
    parts: RewardParts | None = None


class WebShopEnv:
    """One shopping session at a time over a shared :class:`Shop` and a fixed set of goals."""

    def __init__(
        self, shop: Shop, goals: Iterable[Goal], max_steps: int = DEFAULT_MAX_STEPS
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.shop = shop
        self.goals: dict[str, Goal] = dict(goals_by_id(goals))
        self.max_steps = max_steps
        self._session: _Session | None = None

    @property
    def session_ids(self) -> list[str]:
        return list(self.goals)

    @property
    def goal(self) -> Goal:
        return self._require_session().goal

    def reset(self, session_id: str) -> tuple[str, dict[str, Any]]:
        """Start session ``session_id`` on the search page; returns ``(observation, info)``."""
        goal = self.goals.get(session_id)
        if goal is None:
            known = list(self.goals)
            sample = ", ".join(known[:3]) + (", ..." if len(known) > 3 else "")
            raise KeyError(
                f"unknown WebShop session id {session_id!r}: this environment holds "
                f"{len(known)} sessions ({sample}); pick one of env.session_ids"
            )
        self._session = _Session(goal=goal)
        return self._render(), self._info(valid=True)

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        """Apply one action; returns ``(observation, reward, done, info)``."""
        session = self._require_session()
        if session.done:
            return (
                "The episode is over. Call reset(session_id) to start another session.",
                0.0,
                True,
                self._info(valid=False, error="episode already over"),
            )
        session.steps += 1
        error = self._apply(session, action)
        extra: dict[str, Any] = {}
        if session.done:
            extra = self._purchase_info(session)
        elif session.steps >= self.max_steps:
            session.done = True
            extra = {"truncated": True}
        observation = self._render()
        if error:
            observation = f"Invalid action: {error}\n\n{observation}"
        elif extra.get("truncated"):
            observation = f"Out of steps ({self.max_steps}): nothing was bought.\n\n{observation}"
        reward = session.reward if session.done else 0.0
        return (
            observation,
            reward,
            session.done,
            self._info(valid=error is None, error=error, **extra),
        )

    def available_actions(self) -> list[str]:
        """The actions that fit the current page (``search[<query>]`` stands for any query)."""
        session = self._require_session()
        if session.done:
            return []
        if session.page == "search":
            return ["search[<query>]"]
        if session.page == "results":
            actions = [f"click[{BACK_TO_SEARCH}]"]
            if session.page_number > 1:
                actions.append(f"click[{PREV_PAGE}]")
            if session.page_number * PAGE_SIZE < len(session.results):
                actions.append(f"click[{NEXT_PAGE}]")
            return actions + [f"click[{p.asin.lower()}]" for p in self._page_products(session)]
        if session.page == "item":
            assert session.product is not None
            options = [f"click[{v}]" for vs in session.product.options.values() for v in vs]
            return [  # buttons, then options, as WebShop's get_available_actions lists them
                f"click[{BACK_TO_SEARCH}]",
                f"click[{PREV_PAGE}]",
                f"click[{DESCRIPTION}]",
                f"click[{FEATURES}]",
                f"click[{BUY_NOW}]",
                *options,
            ]
        return [f"click[{BACK_TO_SEARCH}]", f"click[{PREV_PAGE}]"]

    # -- transitions -------------------------------------------------------------------------

    def _apply(self, session: _Session, action: str) -> str | None:
        """Change the page for ``action``; returns why it is invalid, or None."""
        parsed = parse_action(action)
        if parsed is None:
            return (
                f"{action.strip()[:80]!r} is not an action; write search[<query>] or "
                "click[<button>] exactly once"
            )
        verb, arg = parsed
        if not arg:
            return f"{verb}[] needs an argument inside the brackets"
        if verb == "search":
            if session.page != "search":
                return "search[...] works only on the search page; click[back to search] first"
            session.query = arg
            session.results = self.shop.search(arg)
            session.page_number = 1
            session.page = "results"
            return None
        target = arg.lower()
        if session.page == "search":
            return "there is nothing to click on the search page; use search[<query>]"
        if target == BACK_TO_SEARCH:
            session.page, session.product, session.chosen = "search", None, {}
            return None
        if session.page == "results":
            return self._click_results(session, target)
        if session.page == "item":
            return self._click_item(session, target)
        if target == PREV_PAGE:  # description / features
            session.page = "item"
            return None
        return f"click[{arg}] is not a button here; use click[< prev] to return to the item"

    def _click_results(self, session: _Session, target: str) -> str | None:
        if target == NEXT_PAGE:
            if session.page_number * PAGE_SIZE >= len(session.results):
                return "this is the last page of results"
            session.page_number += 1
            return None
        if target == PREV_PAGE:
            if session.page_number == 1:
                return "this is the first page of results; click[back to search] for a new search"
            session.page_number -= 1
            return None
        for product in self._page_products(session):
            if target in (product.asin.lower(), product.title.lower()):
                session.product, session.chosen, session.page = product, {}, "item"
                return None
        return f"click[{target}] matches no product on this page; click a product id shown in []"

    def _click_item(self, session: _Session, target: str) -> str | None:
        product = session.product
        assert product is not None
        if target == BUY_NOW:
            parts = compute_reward(product, session.goal, session.chosen)
            session.reward, session.done, session.page = parts.reward, True, "done"
            session.parts = parts
            return None
        if target == PREV_PAGE:
            session.page, session.product, session.chosen = "results", None, {}
            return None
        if target in (DESCRIPTION, FEATURES):
            session.page = target
            return None
        for group, values in product.options.items():
            if target in values:
                session.chosen[group] = target
                return None
        return f"click[{target}] is not an option or button of this item"

    # -- rendering ---------------------------------------------------------------------------

    def _page_products(self, session: _Session) -> list[Product]:
        start = (session.page_number - 1) * PAGE_SIZE
        return session.results[start : start + PAGE_SIZE]

    def _render(self) -> str:
        session = self._require_session()
        head = f"Instruction: {session.goal.instruction}"
        if session.page == "search":
            return f"WebShop\n{head}\n[Search]"
        if session.page == "results":
            total = len(session.results)
            lines = [head, f"[{BACK_TO_SEARCH.title()}]"]
            if not total:
                lines.append(f"No results for {session.query!r}.")
                return "\n".join(lines)
            lines.append(f"Page {session.page_number} (Total results: {total})")
            if session.page_number > 1:
                lines.append("[< Prev]")
            if session.page_number * PAGE_SIZE < total:
                lines.append("[Next >]")
            for product in self._page_products(session):
                lines.append(f"[{product.asin.lower()}] {product.title} | ${product.price:.2f}")
            return "\n".join(lines)
        product = session.product
        if session.page == "done":
            chosen = ", ".join(f"{k}: {v}" for k, v in session.chosen.items()) or "none"
            assert product is not None
            return (
                f"Thank you for shopping with us!\nYou bought: {product.title} "
                f"(options: {chosen}).\nYour score (min 0.0, max 1.0): {session.reward:.2f}"
            )
        if session.done:
            return f"{head}\nThe session is over."
        assert product is not None
        if session.page == DESCRIPTION:
            return f"{head}\n[Back To Search]\n[< Prev]\n{product.description or 'N.A.'}"
        if session.page == FEATURES:
            bullets = "\n".join(f"- {f}" for f in product.features) or "N.A."
            return f"{head}\n[Back To Search]\n[< Prev]\n{bullets}"
        lines = [head, "[Back To Search]", "[< Prev]"]
        for group, values in product.options.items():
            shown = " ".join(
                f"[{v}]*" if session.chosen.get(group) == v else f"[{v}]" for v in values
            )
            lines.append(f"{group}: {shown}")
        lines += [
            product.title,
            f"Price: ${product.price:.2f}",
            f"Attributes: {', '.join(product.attributes) or 'N.A.'}",
            "[Description] [Features] [Buy Now]",
        ]
        return "\n".join(lines)

    def _info(self, valid: bool, error: str | None = None, **extra: Any) -> dict[str, Any]:
        session = self._require_session()
        info: dict[str, Any] = {
            "session_id": session.goal.session_id,
            "page": session.page,
            "steps": session.steps,
            "valid": valid,
            "available_actions": self.available_actions(),
        }
        if error:
            info["error"] = error
        info.update(extra)
        return info

    @staticmethod
    def _purchase_info(session: _Session) -> dict[str, Any]:
        parts = session.parts
        assert session.product is not None and parts is not None
        return {
            "purchased": session.product.asin,
            "options": dict(session.chosen),
            "reward_parts": asdict(parts),
            "success": parts.reward >= SUCCESS_THRESHOLD,
        }

    def _require_session(self) -> _Session:
        if self._session is None:
            raise RuntimeError("call reset(session_id) before step() (no session is running)")
        return self._session


def goals_by_id(goals: Iterable[Goal]) -> Mapping[str, Goal]:
    """Goals keyed by session id; a duplicate id is an error (sessions must be unambiguous)."""
    table: dict[str, Goal] = {}
    for goal in goals:
        if goal.session_id in table:
            raise ValueError(f"duplicate session id {goal.session_id!r} among the goals")
        table[goal.session_id] = goal
    return table
