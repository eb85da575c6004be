"""A scripted expert: the action sequence that buys the goal's target with the wanted options.

For SFT warm-up data. It searches with the instruction's key words (attributes and product type),
pages through the results until the target appears (at most the five result pages), clicks it,
picks each wanted option and buys. When the target is not among the results it searches the
target's title instead. Standard library only apart from the shop's index (copied into the kit).
"""

from __future__ import annotations

from .catalog import Goal
from .env import NEXT_PAGE, PAGE_SIZE
from .search import Shop


def expert_query(goal: Goal) -> str:
    """The search an expert types: the wanted attributes and the product type."""
    return " ".join([*goal.attributes, goal.query]).strip() or goal.instruction


def expert_actions(goal: Goal, shop: Shop) -> list[str]:
    """Actions from the search page to ``click[buy now]`` that buy ``goal``'s target product.

    Raises ValueError when the target is not in the catalogue (the goal does not belong to it).
    """
    target = shop.lookup(goal.asin)
    if target is None:
        raise ValueError(f"goal {goal.session_id!r}: target {goal.asin!r} is not in the catalogue")
    actions: list[str] = []
    for query in (expert_query(goal), target.title):
        results = shop.search(query)
        ids = [p.asin for p in results]
        if target.asin in ids:
            page = ids.index(target.asin) // PAGE_SIZE
            actions += [f"search[{query}]", *[f"click[{NEXT_PAGE}]"] * page]
            break
        actions += [f"search[{query}]", "click[back to search]"]
    else:
        raise ValueError(f"goal {goal.session_id!r}: no search finds target {goal.asin!r}")
    actions.append(f"click[{target.asin.lower()}]")
    for values in target.options.values():
        wanted = [o for o in goal.options if o in values]
        if wanted:
            actions.append(f"click[{wanted[0]}]")
    actions.append("click[buy now]")
    return actions
