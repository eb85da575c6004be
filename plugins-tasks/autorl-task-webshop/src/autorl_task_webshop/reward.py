"""The WebShop reward (Yao et al., 2022, "WebShop", section 3.2; reference ``engine/goal.py``).

    r = r_type * (|U_att ∩ Y_att| + |U_opt ∩ Y_opt| + 1[y_price <= u_price])
               / (|U_att| + |U_opt| + 1)

``U`` is the goal (instruction), ``Y`` the purchase. As in the reference:

* an attribute matches when a product attribute is fuzzily equal (token-set ratio > 85) or the
  goal attribute occurs in the title, features or description;
* each purchased option matches when it equals a goal option (``size`` exactly, other groups by
  token-set ratio > 85) or occurs in the title, features or description;
* ``r_type`` is 1 when the product types agree, 0.5 when neither the search query, the category
  breadcrumb (two shared levels) nor the title (> 20 % of the goal's type words) agree, 0.1 when
  the title shares under 10 % and 0 when it shares none.

Deviation: the reference takes the title's nouns with spaCy; no spaCy model is available offline
here, so the type words are the title's content words (:func:`text.content_words`).
Standard library only (copied into the workspace kit).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .catalog import SEP, Goal, Product
from .text import content_words, token_set_ratio

FUZZY_THRESHOLD = 85
EXACT_MATCH_OPTIONS = frozenset({"size"})
SUCCESS_THRESHOLD = 0.5
"""A session counts as a success when its reward is at least this (the paper's protocol)."""


@dataclass(frozen=True)
class RewardParts:
    """The terms of one reward, reported in the step's ``info`` and in trajectories."""

    reward: float
    r_type: float
    title_score: float
    query_match: bool
    category_match: bool
    attribute_matches: int
    n_attributes: int
    option_matches: int
    n_options: int
    price_ok: bool


def _in_text(needle: str, product: Product) -> bool:
    needle = needle.lower()
    return (
        needle in product.title.lower()
        or needle in " ".join(product.features).lower()
        or needle in product.description.lower()
    )


def type_reward(product: Product, goal: Goal) -> tuple[float, float, bool, bool]:
    """``(r_type, title_score, query_match, category_match)`` of buying ``product`` for ``goal``."""
    query_match = bool(goal.query) and product.query.lower() == goal.query.lower()
    bought_levels = {x.strip() for x in product.product_category.split(SEP) if x.strip()}
    goal_levels = {x.strip() for x in goal.product_category.split(SEP) if x.strip()}
    category_match = len(bought_levels & goal_levels) >= 2
    wanted = content_words(goal.name)
    if not wanted:
        title_score = 0.2
    else:
        title_score = len(set(content_words(product.title)) & set(wanted)) / len(wanted)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return r_type, title_score, query_match, category_match


def attribute_matches(product: Product, goal: Goal) -> int:
    """How many goal attributes the product has (fuzzy, or mentioned in its text)."""
    count = 0
    for wanted in goal.attributes:
        fuzzy = any(token_set_ratio(have, wanted) > FUZZY_THRESHOLD for have in product.attributes)
        if fuzzy or _in_text(wanted, product):
            count += 1
    return count


def option_matches(product: Product, goal: Goal, chosen: Mapping[str, str]) -> int:
    """How many chosen options match a goal option (``size`` exactly, others fuzzily)."""
    wanted = [o.lower() for o in goal.options]
    count = 0
    for group, value in chosen.items():
        value = value.lower()
        if group.lower() in EXACT_MATCH_OPTIONS:
            matched = value in wanted
        else:
            matched = any(token_set_ratio(w, value) > FUZZY_THRESHOLD for w in wanted)
        if matched or _in_text(value, product):
            count += 1
    return count


def compute_reward(
    product: Product, goal: Goal, chosen: Mapping[str, str], price: float | None = None
) -> RewardParts:
    """The reward of buying ``product`` with options ``chosen`` (group -> value) for ``goal``."""
    price = product.price if price is None else price
    r_type, title_score, query_match, category_match = type_reward(product, goal)
    n_att = attribute_matches(product, goal)
    n_opt = min(option_matches(product, goal, chosen), len(goal.options))  # |U_opt ∩ Y_opt|
    price_ok = goal.price_upper <= 0 or price <= goal.price_upper
    denominator = len(goal.attributes) + len(goal.options) + 1
    total = r_type * (n_att + n_opt + int(price_ok)) / denominator
    return RewardParts(
        reward=total,
        r_type=r_type,
        title_score=title_score,
        query_match=query_match,
        category_match=category_match,
        attribute_matches=n_att,
        n_attributes=len(goal.attributes),
        option_matches=n_opt,
        n_options=len(goal.options),
        price_ok=price_ok,
    )
