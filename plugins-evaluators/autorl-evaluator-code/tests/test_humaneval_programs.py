"""Real HumanEval problems through the evaluator's execution path: right passes, wrong fails."""

from __future__ import annotations

import autorl_task_humaneval.data as data
import pytest
from autorl_evaluator_code.contract import CODE
from autorl_evaluator_code.evaluator import score_programs, settings

from autorl.contracts import load_contract


@pytest.fixture(scope="module")
def problems() -> list[dict]:
    return data.load_problems()[82:87]


def test_canonical_pass_and_wrong_fail(problems: list[dict]) -> None:
    protocol = load_contract(CODE, "autorl_task_humaneval.kit")
    right = [[p["canonical_solution"]] for p in problems]
    wrong = [["    return None\n"] for _ in problems]
    cfg = settings({"timeout_s": 10.0})
    records, metrics = score_programs(problems, right, protocol, cfg)
    assert metrics["pass@1"] == 1.0, [r["samples"][0]["detail"] for r in records]
    records, metrics = score_programs(problems, wrong, protocol, cfg)
    assert metrics["pass@1"] == 0.0
    assert all(r["samples"][0]["status"] == "failed" for r in records)


def test_pass_at_k_from_mixed_samples(problems: list[dict]) -> None:
    protocol = load_contract(CODE, "autorl_task_humaneval.kit")
    two = problems[:2]
    samples = [[two[0]["canonical_solution"], "    return None\n"], ["    return None\n"] * 2]
    cfg = settings({"n": 2, "temperature": 0.8, "k": [2]})
    _, metrics = score_programs(two, samples, protocol, cfg)
    assert metrics["pass@1"] == pytest.approx(0.25)
    assert metrics["pass@2"] == pytest.approx(0.5)


def test_bad_config_is_a_precise_error() -> None:
    from autorl.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown option"):
        settings({"timeout": 3})
    with pytest.raises(ConfigError, match="temperature"):
        settings({"n": 5})


def test_reference_replies_through_the_execution_path(problems: list[dict]) -> None:
    """HumanEval's reference prompt (OpenCompass humaneval_gen): a chat reply with the whole
    function in a ```python block passes, the same function with no fence passes, a bare body
    (its first indentation stripped, as the reference does) and an unclosed fence fail."""
    protocol = load_contract(CODE, "autorl_task_humaneval.kit:REFERENCE")
    whole = [p["prompt"] + p["canonical_solution"] for p in problems]
    fenced = [[f"Here you go:\n```python\n{w}```\nIt works."] for w in whole]
    plain = [[w] for w in whole]
    cfg = settings({"timeout_s": 3.0})
    for replies in (fenced, plain):
        records, metrics = score_programs(problems, replies, protocol, cfg)
        assert metrics["pass@1"] == 1.0, [r["samples"][0]["detail"] for r in records]
    bare = [[p["canonical_solution"]] for p in problems]
    unclosed = [[f"```python\n{w}"] for w in whole]
    for replies in (bare, unclosed):
        _, metrics = score_programs(problems, replies, protocol, cfg)
        assert metrics["pass@1"] == 0.0
