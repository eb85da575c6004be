"""``autorl run``'s flags: durations and key=value options read as a file would."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_runner.cli import parse_duration, parse_options

from autorl.config import load_config
from autorl.errors import ConfigError


def test_durations_and_options() -> None:
    assert parse_duration("90") == 90
    assert parse_duration("10m") == 600
    assert parse_duration("1.5h") == 5400
    with pytest.raises(ConfigError):
        parse_duration("soon")
    assert parse_options(("a=1", "b=x", "c=true"), "--task-option") == {"a": 1, "b": "x", "c": True}
    with pytest.raises(ConfigError):
        parse_options(("novalue",), "--task-option")


def test_a_budget_duration_reads_the_same_in_a_file_as_on_the_command_line(tmp_path: Path) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text('[budget]\nwall_seconds = "15m"\n')
    assert load_config(toml).budget.wall_seconds == parse_duration("15m") == 900
    toml.write_text('[budget]\nwall_seconds = "soon"\n')
    with pytest.raises(ConfigError, match="is not a duration"):
        load_config(toml)
