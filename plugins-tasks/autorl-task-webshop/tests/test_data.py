"""The shipped catalogue and goals: determinism, disjoint splits, the expert, BM25 recall."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from autorl_task_webshop.catalog import Goal, Product
from autorl_task_webshop.env import WebShopEnv
from autorl_task_webshop.expert import expert_actions, expert_query
from autorl_task_webshop.search import Shop
from autorl_task_webshop.task import DATA_DIR
from autorl_testing.workspace import check_generated

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def test_shipped_data_is_what_the_script_builds() -> None:
    check_generated(PACKAGE_ROOT / "scripts" / "build_catalog.py")
    total = sum(p.stat().st_size for p in DATA_DIR.glob("*.json"))
    assert total < 2_000_000, f"shipped data is {total} bytes"


def test_catalogue_shape(products: list[Product]) -> None:
    assert len(products) == 1000
    assert len({p.asin for p in products}) == 1000
    assert Counter(p.category for p in products) == {
        c: 100 for c in Counter(p.category for p in products)
    }
    assert len({p.category for p in products}) == 10
    for p in products:
        assert p.price > 0 and 3 <= len(p.attributes) <= 5 and p.options


def test_splits_are_disjoint_in_goals_and_target_products(
    train_goals: list[Goal], eval_goals: list[Goal], products: list[Product]
) -> None:
    assert (len(train_goals), len(eval_goals)) == (500, 100)
    assert not {g.session_id for g in train_goals} & {g.session_id for g in eval_goals}
    assert not {g.instruction for g in train_goals} & {g.instruction for g in eval_goals}
    assert not {g.asin for g in train_goals} & {g.asin for g in eval_goals}

    def signature(g: Goal) -> tuple:
        return (g.query, tuple(sorted(g.attributes)), tuple(sorted(g.options)))

    assert not {signature(g) for g in train_goals} & {signature(g) for g in eval_goals}
    asins = {p.asin for p in products}
    assert all(g.asin in asins for g in train_goals + eval_goals)


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_expert_buys_every_train_goal_perfectly(shop: Shop, train_goals: list[Goal]) -> None:
    env = WebShopEnv(shop, train_goals)
    rewards = []
    for goal in train_goals:
        env.reset(goal.session_id)
        actions = expert_actions(goal, shop)
        assert len(actions) <= env.max_steps
        for action in actions:
            _, reward, done, info = env.step(action)
            assert info["valid"], (goal.session_id, action, info)
        assert done
        rewards.append(reward)
    assert min(rewards) == 1.0


@pytest.mark.slow  # over 1.5 CPU-s: make test, not make check
def test_bm25_finds_the_target_for_most_expert_searches(
    shop: Shop, train_goals: list[Goal], eval_goals: list[Goal]
) -> None:
    for goals in (train_goals, eval_goals):
        top10 = sum(g.asin in [p.asin for p in shop.search(expert_query(g), k=10)] for g in goals)
        assert top10 / len(goals) >= 0.85
