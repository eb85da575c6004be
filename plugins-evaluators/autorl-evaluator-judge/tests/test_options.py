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
        ({}, "judge=None is not a driver name"),
        ({"judge": "gpt-4.1"}, "not a driver name"),
        ({**GOOD, "judges": "x/y"}, "unknown option"),
        ({**GOOD, "batch_size": 0}, "batch_size=0 must be a positive integer"),
        ({**GOOD, "concurrency": "4"}, "concurrency='4' must be a positive integer"),
        ({**GOOD, "judge_temperature": 3}, r"must be a number in \[0, 2\]"),
        ({**GOOD, "stream": "yes"}, "must be true or false"),
        ({**GOOD, "cassette_mode": "play"}, "cassette_mode='play' is not one of"),
        ({**GOOD, "cassette_mode": "replay"}, "needs a cassette"),
        ({**GOOD, "glm": "length_controlled_v9"}, "glm='length_controlled_v9'"),
        ({**GOOD, "judge_options": ["timeout_s", 3]}, "must be a table"),
        ({**GOOD, "limit": -1}, "limit=-1 must be a positive integer"),
    ],
)
def test_bad_options(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings(config)
