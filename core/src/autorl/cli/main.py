"""The ``autorl`` command: a click group whose subcommands are imported only when used.

Start-up stays fast (``autorl --help`` imports neither rich nor FastAPI nor any plugin's heavy
code): built-in commands are listed by name and one-line help; their modules load on invocation.
"""

from __future__ import annotations

import os
from typing import Any

import click

from autorl.errors import AutorlError

BUILTIN_COMMANDS: dict[str, tuple[str, str]] = {
    "version": ("autorl.cli.info:version", "Show the versions of autorl and its plugins."),
    "plugins": ("autorl.cli.info:plugins", "List installed plugins, or diagnose broken ones."),
    "list": ("autorl.cli.info:list_components", "List the components of one kind."),
    "show": ("autorl.cli.info:show", "Resolve one component by name and show its spec."),
}
"""Plugin host commands; ``run`` and ``prepare`` come from the run engine (``autorl-runner``),
``report`` and ``runs`` from ``autorl-records``, like any plugin's commands."""


def _debug() -> bool:
    return os.environ.get("AUTORL_DEBUG", "").lower() in {"1", "true", "yes"}


class LazyGroup(click.Group):
    """Resolve subcommands from import strings on demand; plugin commands come from the registry."""

    def _plugin_commands(self) -> dict[str, tuple[str, str]]:
        from autorl.registry import get_registry

        found = {}
        for entry in get_registry().entries("command"):
            if entry.name not in BUILTIN_COMMANDS:
                found[entry.name] = (entry.spec.factory, entry.spec.description)
        return found

    def _table(self, ctx: click.Context) -> dict[str, tuple[str, str]]:
        return {**BUILTIN_COMMANDS, **self._plugin_commands()}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self._table(ctx))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = BUILTIN_COMMANDS.get(cmd_name) or self._plugin_commands().get(cmd_name)
        if target is None:
            from autorl.kinds import shipped_distribution

            where = shipped_distribution("command", cmd_name)  # `autorl run`: autorl-runner
            if where is None:
                return None
            return _Placeholder(
                cmd_name,
                f"it comes from {where}, which is not installed or did not load",
                hint=f"pip install {where} ('autorl plugins doctor' if it is installed)",
            )
        from autorl.registry import import_object

        try:
            command = import_object(target[0])
        except (ImportError, AttributeError) as exc:
            return _Placeholder(cmd_name, f"{target[1]} (not available: {exc})", broken=True)
        if not isinstance(command, click.Command):
            return _Placeholder(
                cmd_name,
                f"{target[0]} is a {type(command).__name__}, not a click command",
                broken=True,
            )
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, help_) in sorted(self._table(ctx).items())]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:
            ctx.exit(report_error(exc))


def report_error(exc: BaseException) -> int:
    """Print an error without a traceback (unless debugging); return the exit code."""
    if isinstance(exc, AutorlError):
        click.secho(f"error: {exc.message}", fg="red", err=True)
        if exc.hint:
            click.echo(f"  hint: {exc.hint}", err=True)
        return exc.exit_code
    if _debug():
        raise exc
    click.secho(f"error: {type(exc).__name__}: {exc}", fg="red", err=True)
    click.echo("  run again with --debug (or AUTORL_DEBUG=1) for the traceback", err=True)
    return 1


class _Placeholder(click.Command):
    """A command known by name only (for --help listings, or when its module is missing)."""

    def __init__(
        self, name: str, help_: str, broken: bool = False, hint: str | None = None
    ) -> None:
        super().__init__(
            name,
            help=help_,
            short_help=help_,
            context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        )
        self.broken = broken
        self.hint = hint

    def invoke(self, ctx: click.Context) -> Any:
        raise AutorlError(f"'autorl {self.name}' is not yet available: {self.help}", hint=self.hint)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks of unexpected errors.")
@click.version_option(package_name="autorl", message="autorl %(version)s")
def cli(debug: bool) -> None:
    """autorl: can LLM agents engineer RL post-training? Run, grade and report agent runs."""
    if debug:
        os.environ["AUTORL_DEBUG"] = "1"


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point; errors raised while listing commands (strict plugin mode,
    a broken registry) are reported like errors inside a command."""
    try:
        cli.main(args=argv, prog_name="autorl")
    except AutorlError as exc:
        raise SystemExit(report_error(exc)) from None


if __name__ == "__main__":
    main()
