"""Entry point: the `autorl agent-cli` command, and trajectory collection at the end of a run.

No heavy imports here: this module is imported by every `autorl` command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from autorl import hookimpl
from autorl.specs import CommandSpec

if TYPE_CHECKING:
    from autorl.events import RecordContribution, RunEndEvent


@hookimpl
def autorl_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec(
            name="agent-cli",
            factory="autorl_agent_cli_common.command:agent_cli",
            description="Install the pinned agent CLIs ahead of time; extract a run's trajectory",
        )
    ]


@hookimpl(tryfirst=True)
def autorl_contribute_to_record(event: RunEndEvent) -> RecordContribution | None:
    """After a run of a CLI agent: keep its native log and the common trajectory in the run
    (first: the analysis reads them as what the agent claimed)."""
    from autorl.events import RecordContribution
    from autorl_agent_cli_common.collect import collect_run

    written = collect_run(event.run_dir)
    if not written:
        return None
    run_dir = Path(event.run_dir)
    files = [str(p.relative_to(run_dir) if p.is_relative_to(run_dir) else p.name) for p in written]
    return RecordContribution(name="agent_trajectory", data={"files": files, "basis": "claimed"})
