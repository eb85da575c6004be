"""Entry point: the ``autorl run`` and ``autorl prepare`` commands (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import CommandSpec


@hookimpl
def autorl_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec(
            name="run",
            factory="autorl_runner.cli:run",
            description="Run an agent on a task under a budget, and report.",
        ),
        CommandSpec(
            name="prepare",
            factory="autorl_runner.cli:prepare",
            description="Fill the caches (task data, converted models) for offline runs.",
        ),
    ]
