"""Options: the evaluator's own keys, keys forwarded to make_env, and the protocol module check."""

from __future__ import annotations

import pytest
from autorl_evaluator_rollout.options import DEFAULTS, env_config, parse_settings
from autorl_evaluator_rollout.protocol import load_protocol

from autorl.errors import ConfigError

PROTOCOL: dict = {}


def test_defaults_and_overrides() -> None:
    settings = parse_settings({**PROTOCOL, "batch_size": 32, "temperature": 0.7, "limit": 5})
    assert (settings.batch_size, settings.temperature, settings.limit) == (32, 0.7, 5)
    assert settings.max_new_tokens == DEFAULTS["max_new_tokens"] and settings.device == "auto"
    assert parse_settings({**PROTOCOL, "history_window": 0}).history_window == 0


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"batch_size": 0}, r"batch_size: Input should be greater than 0 \(got 0\)"),
        ({"max_new_tokens": "many"}, "max_new_tokens: Input should be a valid integer"),
        ({"temperature": -1}, "temperature: Input should be greater than or equal to 0"),
        ({"history_window": -2}, "history_window: Input should be greater than or equal to 0"),
        ({"device": 3}, "device: Input should be a valid string"),
        ({"prefix_cache": "yes"}, "prefix_cache: Input should be a valid boolean"),
        ({"order_seed": "7"}, "order_seed: Input should be a valid integer"),
    ],
)
def test_bad_values_are_precise_errors(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_settings(config)


def test_declared_task_keys_are_forwarded_and_others_refused() -> None:
    declared = load_protocol("counter_protocol").env_options
    config = {**PROTOCOL, "batch_size": 4, "max_steps": 3, "tag": "x"}
    assert env_config(config, declared) == {"max_steps": 3, "tag": "x"}
    with pytest.raises(ConfigError, match=r"unknown option.*'max_stepz'") as info:
        env_config({**config, "max_stepz": 3}, declared, "counter_protocol")
    hint = str(info.value)
    assert "batch_size" in hint and "max_steps" in hint  # both kinds of known keys are listed


def test_without_declared_keys_everything_is_forwarded_but_typos() -> None:
    assert env_config({**PROTOCOL, "anything": 1}, None) == {"anything": 1}
    with pytest.raises(ConfigError, match="did you mean 'max_new_tokens'"):
        env_config({**PROTOCOL, "max_new_token": 5}, None)


def test_protocol_modules_are_checked() -> None:
    protocol = load_protocol("counter_protocol")
    assert protocol.episode_metrics is not None and protocol.stop == ()
    with pytest.raises(ConfigError, match="cannot be imported"):
        load_protocol("no_such_protocol_module")
    with pytest.raises(ConfigError, match="lacks load_sessions, make_env, build_messages"):
        load_protocol("json")
