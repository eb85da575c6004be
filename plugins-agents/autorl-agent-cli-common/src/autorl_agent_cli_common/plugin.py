"""Entry point: registers the `autorl agent-cli` command (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import CommandSpec


@hookimpl
def autorl_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec(
            name="agent-cli",
            factory="autorl_agent_cli_common.command:agent_cli",
            description="Install the pinned agent CLIs ahead of time; extract a run's trajectory",
        )
    ]
