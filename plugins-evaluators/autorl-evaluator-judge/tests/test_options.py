"""Bad evaluator options are ConfigErrors that name the option and say what is expected."""

from __future__ import annotations

import pytest
from autorl_evaluator_judge.options import settings

from autorl.errors import ConfigError

GOOD = {"judge": "scripted/judge.yaml"}


def test_defaults_fill_in() -> None:
    cfg = settings(GOOD)
    assert cfg["annotator"] == "weighted_alpaca_eval_gpt4_turbo"
    assert cfg["side_seed"] == 123 and cfg["cache"] is True and cfg["cassette"] is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "judge: Field required"),
        ({"judge": "gpt-4.1"}, "not a driver name"),
        ({**GOOD, "judges": "x/y"}, r"unknown option 'judges' \(did you mean 'judge'\?\)"),
        ({**GOOD, "batch_size": 0}, r"batch_size: Input should be greater than 0 \(got 0\)"),
        ({**GOOD, "concurrency": "four"}, "concurrency: Input should be a valid integer"),
        ({**GOOD, "judge_temperature": 3}, "judge_temperature: Input should be less than or"),
        ({**GOOD, "stream": "yes"}, "stream: Input should be a valid boolean"),
        ({**GOOD, "cassette_mode": "play"}, "cassette_mode: Input should be 'record', 'replay'"),
        ({**GOOD, "cassette_mode": "replay"}, "needs a cassette"),
        ({**GOOD, "glm": "length_controlled_v9"}, "glm: Input should be"),
        ({**GOOD, "judge_options": ["timeout_s", 3]}, "judge_options: Input should be a valid"),
        ({**GOOD, "limit": -1}, "limit: Input should be greater than 0"),
    ],
)
def test_bad_options(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings(config)
