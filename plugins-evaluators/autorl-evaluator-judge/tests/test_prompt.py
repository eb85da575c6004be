"""AlpacaEval's judge prompt as we send it: template from the package, seeded sides, parsing."""

from __future__ import annotations

import pytest
from autorl_evaluator_judge import alpaca
from autorl_evaluator_judge.prompt import (
    is_switched,
    judge_messages,
    load_template,
    parse_answer,
    preference,
)

from autorl.errors import ConfigError


def test_template_is_alpacaeval_2s_from_the_installed_package() -> None:
    template = load_template()
    assert template.annotator == "weighted_alpaca_eval_gpt4_turbo"
    assert template.path.is_relative_to(alpaca.package_dir())
    assert template.path.name == "alpaca_eval_clf.txt"
    assert "m or M" in template.text


def test_messages_hold_the_instruction_and_both_outputs_in_order() -> None:
    messages = judge_messages(load_template(), "Say hi.", "FIRST ANSWER", "SECOND ANSWER")
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "Say hi." in user
    first, second = user.index("FIRST ANSWER"), user.index("SECOND ANSWER")
    assert user.index('"model_identifier": "m"') < first < user.index('"model_identifier": "M"')
    assert second > user.index('"model_identifier": "M"')
    assert "<|im_start|>" not in user and "<|im_end|>" not in user


def test_sides_are_seeded_per_instruction_as_alpacaeval_draws_them() -> None:
    utils = alpaca.modules().utils
    instructions = [f"instruction {i}" for i in range(200)]
    draws = [is_switched(i) for i in instructions]
    assert draws == [is_switched(i) for i in instructions]  # deterministic
    assert 70 < sum(draws) < 130  # both sides, about half each
    expected = [
        utils.random_seeded_choice(
            seed="is_switch_output_1_output_2" + i + "123", choices=[False, True]
        )
        for i in instructions
    ]
    assert draws == expected
    assert [is_switched(i, seed=7) for i in instructions] != draws


@pytest.mark.parametrize(
    ("text", "winner"),
    [
        ("m", 1),
        ("M", 2),
        (" M\n", 2),
        ('"m"', 1),
        ("m.", 1),
        ("Model", None),
        ("", None),
        ("I cannot decide", None),
    ],
)
def test_answers_are_parsed_strictly(text: str, winner: int | None) -> None:
    assert parse_answer(text) == winner


def test_preference_undoes_the_side_switch() -> None:
    assert preference(1, switched=False) == 1.0  # reference shown first and picked
    assert preference(1, switched=True) == 2.0  # model shown first and picked
    assert preference(2, switched=True) == 1.0
    assert preference(None, switched=False) != preference(None, switched=False)  # NaN


def test_unknown_or_unsuitable_annotators_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="no AlpacaEval annotator config"):
        load_template("no_such_annotator")
    with pytest.raises(ConfigError, match="does not answer with 'm' or 'M'"):
        load_template("alpaca_eval_gpt4_turbo_fn")
