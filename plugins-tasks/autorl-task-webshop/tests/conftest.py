"""Shared fixtures: the shipped catalogue and its index are built once per test session."""

from __future__ import annotations

import pytest
from autorl_task_webshop.catalog import Goal, Product, load_goals, load_products
from autorl_task_webshop.search import Shop
from autorl_task_webshop.task import DATA_DIR


@pytest.fixture(scope="session")
def products() -> list[Product]:
    return load_products(DATA_DIR / "catalog.json")


@pytest.fixture(scope="session")
def shop(products: list[Product]) -> Shop:
    return Shop(products)


@pytest.fixture(scope="session")
def train_goals() -> list[Goal]:
    return load_goals(DATA_DIR / "goals_train.json")


@pytest.fixture(scope="session")
def eval_goals() -> list[Goal]:
    return load_goals(DATA_DIR / "goals_eval.json")
