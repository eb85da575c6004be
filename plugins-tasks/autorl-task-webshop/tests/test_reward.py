"""The WebShop reward on worked examples (Yao et al., 2022, and the reference's goal.py)."""

from __future__ import annotations

import pytest
from autorl_task_webshop.catalog import SEP, Goal, Product
from autorl_task_webshop.reward import compute_reward, type_reward
from autorl_task_webshop.text import content_words, token_set_ratio

SHOES = Product(
    asin="B0SHOE0001",
    title="Stridex Lightweight Running Shoes - Non Slip, Classic Edition",
    price=45.0,
    category="shoes",
    product_category=f"Clothing {SEP} Shoes {SEP} Running Shoes",
    query="running shoes",
    attributes=("lightweight", "non slip", "rubber sole"),
    options={"size": ("8", "9", "10"), "color": ("blue", "black")},
    features=("Lightweight: made for everyday use.",),
    description="A running shoe.",
)
LAMP = Product(
    asin="B0LAMP0001",
    title="Lumina Dimmable Table Lamp",
    price=30.0,
    category="home",
    product_category=f"Home {SEP} Lighting {SEP} Table Lamp",
    query="table lamp",
    attributes=("dimmable",),
    options={"color": ("white",)},
)
GOAL = Goal(
    session_id="s0",
    instruction="i need non slip, rubber sole running shoes in blue color and size 9, "
    "and price lower than 60.00 dollars",
    asin=SHOES.asin,
    attributes=("non slip", "rubber sole"),
    options=("blue", "9"),
    price_upper=60.0,
    query="running shoes",
    name=SHOES.title,
    product_category=SHOES.product_category,
)


def test_perfect_purchase_scores_one() -> None:
    parts = compute_reward(SHOES, GOAL, {"size": "9", "color": "blue"})
    assert parts.reward == 1.0
    assert (parts.attribute_matches, parts.option_matches, parts.price_ok) == (2, 2, True)


def test_a_wrong_option_costs_one_term() -> None:
    # 2 attributes + 1 of 2 options + price = 4 of 5
    assert compute_reward(SHOES, GOAL, {"size": "10", "color": "blue"}).reward == pytest.approx(0.8)
    # an unchosen option group does not match either
    assert compute_reward(SHOES, GOAL, {"color": "blue"}).reward == pytest.approx(0.8)
    assert compute_reward(SHOES, GOAL, {}).reward == pytest.approx(0.6)


def test_size_matches_exactly_other_options_fuzzily() -> None:
    goal = Goal(**{**GOAL.__dict__, "options": ("9.5", "blue")})
    parts = compute_reward(SHOES, goal, {"size": "9", "color": "Blue"})
    assert parts.option_matches == 1  # "9" is not "9.5"; "Blue" fuzzily equals "blue"


def test_over_the_price_bound_loses_the_price_term() -> None:
    goal = Goal(**{**GOAL.__dict__, "price_upper": 40.0})
    parts = compute_reward(SHOES, goal, {"size": "9", "color": "blue"})
    assert not parts.price_ok
    assert parts.reward == pytest.approx(0.8)
    assert compute_reward(SHOES, GOAL, {"size": "9", "color": "blue"}, price=61.0).reward == 0.8


def test_missing_attribute_costs_one_term_and_text_mentions_count() -> None:
    goal = Goal(**{**GOAL.__dict__, "attributes": ("non slip", "waterproof")})
    assert compute_reward(SHOES, goal, {"size": "9", "color": "blue"}).reward == pytest.approx(0.8)
    # "classic edition" is not an attribute but the title says it: the reference counts it
    goal = Goal(**{**GOAL.__dict__, "attributes": ("classic edition",)})
    assert compute_reward(SHOES, goal, {"size": "9", "color": "blue"}).attribute_matches == 1


def test_wrong_product_type_scores_zero() -> None:
    r_type, title_score, query_match, category_match = type_reward(LAMP, GOAL)
    assert (r_type, title_score, query_match, category_match) == (0.0, 0.0, False, False)
    assert compute_reward(LAMP, GOAL, {"color": "white"}).reward == 0.0


def test_weak_type_match_is_reduced() -> None:
    # shares one of the 8 type words of the goal's title, and neither query nor category:
    # title_score 0.125 -> r_type 0.5 (no match, but title_score >= 0.1)
    other = Product(**{**LAMP.__dict__, "title": "Stridex Desk Lamp"})
    r_type, title_score, _, _ = type_reward(other, GOAL)
    assert len(content_words(GOAL.name)) == 8
    assert title_score == pytest.approx(0.125)
    assert r_type == 0.5
    # the same product listed under the goal's query is a type match
    listed = Product(**{**other.__dict__, "query": "running shoes"})
    assert type_reward(listed, GOAL)[0] == 1.0


def test_token_set_ratio_behaves_like_fuzzywuzzy() -> None:
    assert token_set_ratio("non slip", "Non-Slip") == 100
    assert token_set_ratio("rubber sole", "sole rubber soft") == 100  # subset of tokens
    assert token_set_ratio("memory foam", "rubber sole") < 50
    assert token_set_ratio("", "x") == 0
