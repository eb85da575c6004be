"""The CLI in-process (click's runner) on a registry the test controls."""

from __future__ import annotations

import json
from typing import Any

import click
import pytest
from click.testing import CliRunner

from autorl import hookimpl
from autorl.cli.main import BUILTIN_COMMANDS, cli
from autorl.errors import ConfigError
from autorl.specs import KINDS, CommandSpec


@click.command()
def explode_clean() -> None:
    """Raise an AutorlError."""
    raise ConfigError("budget must be positive, got -3 (in run.toml, key 'budget')", hint="fix it")


@click.command()
def explode_raw() -> None:
    """Raise an unexpected exception."""
    raise ZeroDivisionError("division by zero in plugin code")


class CommandsPlugin:
    @hookimpl
    def autorl_register_commands(self) -> list[CommandSpec]:
        return [
            CommandSpec(name="explode-clean", factory=f"{__name__}:explode_clean", description="x"),
            CommandSpec(name="explode-raw", factory=f"{__name__}:explode_raw", description="y"),
            CommandSpec(name="not-click", factory=f"{__name__}:CommandsPlugin", description="z"),
            CommandSpec(name="list", factory=f"{__name__}:explode_raw", description="hidden"),
        ]


@pytest.fixture
def runner(register_plugin, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.delenv("AUTORL_DEBUG", raising=False)
    register_plugin(CommandsPlugin(), name="autorl-commands", builtins=True)
    return CliRunner()


def invoke(runner: CliRunner, *args: str) -> Any:
    return runner.invoke(cli, list(args), prog_name="autorl")


def test_help_lists_builtin_and_plugin_commands(runner: CliRunner) -> None:
    result = invoke(runner, "--help")
    assert result.exit_code == 0
    for name in [*BUILTIN_COMMANDS, "explode-clean", "explode-raw"]:
        assert f"  {name} " in result.output


def test_autorl_error_is_a_clean_message_with_exit_2(runner: CliRunner) -> None:
    result = invoke(runner, "explode-clean")
    assert result.exit_code == 2
    assert "error: budget must be positive, got -3 (in run.toml, key 'budget')" in result.output
    assert "hint: fix it" in result.output
    assert "Traceback" not in result.output


def test_unexpected_error_points_at_debug(runner: CliRunner) -> None:
    result = invoke(runner, "explode-raw")
    assert result.exit_code == 1
    assert "error: ZeroDivisionError: division by zero in plugin code" in result.output
    assert "--debug" in result.output and "AUTORL_DEBUG=1" in result.output


def test_debug_flag_lets_the_traceback_through(runner: CliRunner) -> None:
    result = invoke(runner, "--debug", "explode-raw")
    assert isinstance(result.exception, ZeroDivisionError)


def test_plugin_command_that_is_not_click_is_reported(runner: CliRunner) -> None:
    result = invoke(runner, "not-click")
    assert result.exit_code == 2
    assert "not yet available" in result.output and "not a click command" in result.output


def test_doctor_reports_a_plugin_command_hidden_by_a_builtin(runner: CliRunner) -> None:
    result = invoke(runner, "plugins", "doctor")
    assert result.exit_code == 1
    assert "command 'list' is hidden by the built-in 'autorl list'" in result.output


@pytest.mark.parametrize("kind", KINDS)
def test_list_every_kind_as_json(runner: CliRunner, kind: str) -> None:
    result = invoke(runner, "list", kind, "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert isinstance(rows, list)
    for row in rows:
        assert {"name", "provider", "description"} <= set(row)


def test_list_plural_kind_and_table(runner: CliRunner) -> None:
    result = invoke(runner, "list", "executors")
    assert result.exit_code == 0
    assert "local" in result.output and "autorl" in result.output
    assert invoke(runner, "list", "agents").output.strip() == "no agent installed"


def test_list_unknown_kind_says_which_kinds_exist(runner: CliRunner) -> None:
    result = invoke(runner, "list", "taks")
    assert result.exit_code == 2
    assert "'taks' is not one of" in result.output and "'task'" in result.output


def test_missing_command_module_says_not_yet_available(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        BUILTIN_COMMANDS, "report", ("autorl.cli.no_such_module:report", "Re-render a report.")
    )
    result = invoke(runner, "report")
    assert result.exit_code == 2
    assert "'autorl report' is not yet available" in result.output
    assert "No module named 'autorl.cli.no_such_module'" in result.output


def test_python_dash_m_autorl_is_the_cli() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "autorl", "--version"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.startswith("autorl ")
