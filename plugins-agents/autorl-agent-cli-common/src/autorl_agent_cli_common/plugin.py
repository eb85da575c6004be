"""Entry point: the `autorl agent-cli` command, and trajectory collection at the end of a run.

No heavy imports here: this module is imported by every `autorl` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autorl import hookimpl
from autorl.specs import CommandSpec

if TYPE_CHECKING:
    from autorl.events import RunEndEvent


@hookimpl
def autorl_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec(
            name="agent-cli",
            factory="autorl_agent_cli_common.command:agent_cli",
            description="Install the pinned agent CLIs ahead of time; extract a run's trajectory",
        )
    ]


@hookimpl
def autorl_on_run_end(event: RunEndEvent) -> None:
    """After a run of a CLI agent: keep its native log and the common trajectory in the run."""
    from autorl_agent_cli_common.collect import collect_run

    collect_run(event.run_dir)
