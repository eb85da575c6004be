"""Environment transitions, invalid actions, the step limit (on a small hand-made shop)."""

from __future__ import annotations

import pytest
from autorl_task_webshop.catalog import SEP, Goal, Product
from autorl_task_webshop.env import WebShopEnv, parse_action
from autorl_task_webshop.search import Shop


def _product(i: int, title: str, **kw: object) -> Product:
    base = {
        "asin": f"B0TEST{i:04d}",
        "title": title,
        "price": 20.0 + i,
        "category": "shoes",
        "product_category": f"Shoes {SEP} Running",
        "query": "running shoes",
        "attributes": ("non slip",),
        "options": {"size": ("8", "9"), "color": ("blue", "black")},
        "features": ("Non slip sole.",),
        "description": "A good shoe.",
    }
    base.update(kw)
    return Product(**base)  # type: ignore[arg-type]


PRODUCTS = [_product(i, f"Brand{i} Running Shoes Model {i}") for i in range(25)] + [
    _product(99, "Lumina Table Lamp", query="table lamp", attributes=("dimmable",), options={})
]
GOAL = Goal(
    session_id="s1",
    instruction="i need non slip running shoes in blue color and size 9, and price lower "
    "than 30.00 dollars",
    asin="B0TEST0003",
    attributes=("non slip",),
    options=("blue", "9"),
    price_upper=30.0,
    query="running shoes",
    name=PRODUCTS[3].title,
    product_category=f"Shoes {SEP} Running",
)


@pytest.fixture
def env() -> WebShopEnv:
    return WebShopEnv(Shop(PRODUCTS), [GOAL], max_steps=15)


def test_reset_shows_the_instruction_on_the_search_page(env: WebShopEnv) -> None:
    obs, info = env.reset("s1")
    assert GOAL.instruction in obs and "[Search]" in obs
    assert info["page"] == "search" and info["available_actions"] == ["search[<query>]"]


def test_search_paging_item_options_and_purchase(env: WebShopEnv) -> None:
    env.reset("s1")
    obs, reward, done, info = env.step("search[running shoes]")
    assert info["page"] == "results" and "Page 1 (Total results: 25)" in obs
    assert obs.count("| $") == 10 and "click[next >]" in info["available_actions"]
    obs, _, _, info = env.step("click[next >]")
    assert "Page 2" in obs and "click[< prev]" in info["available_actions"]
    env.step("click[next >]")
    obs, _, _, info = env.step("click[next >]")  # page 3 of 3 is the last one
    assert not info["valid"] and "last page" in obs
    env.step("click[< prev]")
    env.step("click[< prev]")
    obs, _, _, info = env.step("click[B0TEST0003]")  # ids are case-insensitive
    assert info["page"] == "item" and "Price: $23.00" in obs and "size: [8] [9]" in obs
    obs, _, _, _ = env.step("click[features]")
    assert "Non slip sole." in obs
    env.step("click[< prev]")
    obs, _, _, _ = env.step("click[9]")
    assert "[9]*" in obs
    env.step("click[blue]")
    obs, reward, done, info = env.step("click[Buy Now]")
    assert done and reward == 1.0 and info["success"]
    assert info["purchased"] == "B0TEST0003" and info["options"] == {"size": "9", "color": "blue"}
    assert info["steps"] == 12
    # stepping a finished episode does not crash
    obs, reward, done, info = env.step("click[buy now]")
    assert done and reward == 0.0 and not info["valid"]


def test_clicking_a_product_by_title_and_going_back(env: WebShopEnv) -> None:
    env.reset("s1")
    env.step("search[running shoes model]")
    obs, _, _, info = env.step("click[brand0 running shoes model 0]")
    assert info["page"] == "item"
    obs, _, _, info = env.step("click[< prev]")
    assert info["page"] == "results"
    obs, _, _, info = env.step("click[back to search]")
    assert info["page"] == "search" and "[Search]" in obs


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        (["buy the shoes"], "is not an action"),
        (["click[buy now]"], "nothing to click on the search page"),
        (["search[]"], "needs an argument"),
        (["search[shoes]", "search[lamp]"], "only on the search page"),
        (["search[shoes]", "click[b0nothere]"], "matches no product on this page"),
        (["search[shoes]", "click[< prev]"], "first page"),
        (["search[running shoes]", "click[b0test0000]", "click[purple]"], "not an option"),
    ],
)
def test_invalid_actions_change_nothing_and_say_why(
    env: WebShopEnv, actions: list[str], message: str
) -> None:
    env.reset("s1")
    for action in actions[:-1]:
        env.step(action)
    page_before = env._require_session().page
    obs, reward, done, info = env.step(actions[-1])
    assert obs.startswith("Invalid action:") and message in obs
    assert not info["valid"] and message in info["error"]
    assert (reward, done, info["page"]) == (0.0, False, page_before)


def test_search_without_hits_shows_an_empty_page(env: WebShopEnv) -> None:
    env.reset("s1")
    obs, _, _, info = env.step("search[zzzz qqqq]")
    assert "No results" in obs and info["available_actions"] == ["click[back to search]"]


def test_the_step_limit_ends_the_episode_with_zero(env: WebShopEnv) -> None:
    env = WebShopEnv(env.shop, [GOAL], max_steps=3)
    env.reset("s1")
    env.step("search[shoes]")
    env.step("click[b0test0003]")
    obs, reward, done, info = env.step("click[9]")
    assert done and reward == 0.0 and info["truncated"] and "Out of steps (3)" in obs


def test_unknown_session_and_step_before_reset_are_clear_errors(env: WebShopEnv) -> None:
    with pytest.raises(RuntimeError, match="call reset"):
        env.step("search[x]")
    with pytest.raises(KeyError, match=r"unknown WebShop session id 'nope'.*1 sessions"):
        env.reset("nope")
    with pytest.raises(ValueError, match="duplicate session id"):
        WebShopEnv(env.shop, [GOAL, GOAL])


def test_sessions_on_one_shop_are_independent(env: WebShopEnv) -> None:
    other = WebShopEnv(env.shop, [GOAL])
    env.reset("s1")
    other.reset("s1")
    env.step("search[shoes]")
    assert other._require_session().page == "search"


def test_parse_action() -> None:
    assert parse_action(" Click [ Next  > ] ") == ("click", "Next >")
    assert parse_action("search[a b]") == ("search", "a b")
    assert parse_action("think[hmm]") is None
