"""Run configs: files and flags merge; bad input is one precise message."""

from __future__ import annotations

from pathlib import Path

import pytest

from autorl.config import load_config
from autorl.errors import ConfigError


def test_defaults_are_the_embedded_default_run() -> None:
    cfg = load_config()
    assert (cfg.task, cfg.agent, cfg.model, cfg.sandbox) == (
        "webshop",
        "scripted",
        "smollm2-135m",
        "isolated",
    )


def test_toml_and_yaml_files_with_flag_overrides(tmp_path: Path) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text('task = "gsm8k"\nmodel = "tiny"\n[budget]\nwall_seconds = 60\n')
    cfg = load_config(toml, {"budget": {"max_submissions": 2}, "seed": 3})
    assert cfg.model == "tiny" and cfg.seed == 3
    assert cfg.budget.wall_seconds == 60 and cfg.budget.max_submissions == 2
    yaml = tmp_path / "run.yaml"
    yaml.write_text("run:\n  agent: scripted\n  task_options:\n    eval_size: 10\n")
    assert load_config(yaml).task_options == {"eval_size": 10}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[budget]\nwall_seconds = "abc"\n', "budget.wall_seconds"),
        ("unknown_key = 1\n", "unknown_key"),
        ("[budget]\nmax_submissions = 0\n", "budget.max_submissions"),
        ("task = \n", "invalid TOML"),
    ],
)
def test_bad_config_names_file_and_field(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert needle in str(info.value)
    assert str(path) in str(info.value)


def test_missing_file_and_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml")
    other = tmp_path / "run.ini"
    other.write_text("x")
    with pytest.raises(ConfigError, match="unknown format"):
        load_config(other)


def test_a_run_config_with_axes_is_sent_to_campaigns(tmp_path: Path) -> None:
    """One command per job: `autorl run` runs one run; a file of axes is a campaign."""
    path = tmp_path / "matrix.toml"
    for table in ("matrix", "axes"):
        path.write_text(f'task = "gsm8k"\n[{table}]\nmodel = ["tiny", "smollm2-135m"]\n')
        with pytest.raises(ConfigError, match=f"has a \\[{table}\\] table") as err:
            load_config(path)
        assert "autorl campaign run" in (err.value.hint or "")
