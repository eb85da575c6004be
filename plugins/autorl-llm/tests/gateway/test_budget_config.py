"""The driver budget fields of the run config: optional, positive, precise errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_llm.gateway import DriverBudget

from autorl.config import load_config
from autorl.errors import ConfigError


def test_driver_budget_fields_are_optional_and_read_from_a_file(tmp_path: Path) -> None:
    assert load_config().budget.max_tokens is None and load_config().budget.max_cost_usd is None
    path = tmp_path / "run.yaml"
    path.write_text(
        "driver: openai/gpt-5.2\nbudget:\n  max_tokens: 100000\n  max_cost_usd: 2.5\n"
        "driver_options:\n  timeout_s: 30\n"
    )
    cfg = load_config(path)
    assert (cfg.budget.max_tokens, cfg.budget.max_cost_usd) == (100000, 2.5)
    assert cfg.driver_options == {"timeout_s": 30}


@pytest.mark.parametrize(
    ("budget", "field"),
    [({"max_tokens": 0}, "budget.max_tokens"), ({"max_cost_usd": -1}, "budget.max_cost_usd")],
)
def test_bad_driver_budgets_name_the_field(budget: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        load_config(overrides={"budget": budget})


def test_a_budget_without_limits_never_refuses() -> None:
    budget = DriverBudget()
    assert budget.refusal() is None and budget.spend()["exhausted"] is None
