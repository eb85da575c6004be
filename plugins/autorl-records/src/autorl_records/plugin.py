"""Entry point: registers ``autorl report`` and ``autorl runs``, and appends each finished run
to the results store (no heavy imports here)."""

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
            name="report",
            factory="autorl_records.commands:report",
            description="Re-render the report of a finished run.",
        ),
        CommandSpec(
            name="runs",
            factory="autorl_records.commands:runs",
            description="List runs: protocol, score, improvement, selection gap, end reason.",
        ),
    ]


@hookimpl
def autorl_on_run_end(event: RunEndEvent) -> None:
    """The run's summary (a rendering of its record) as a line of ``<runs_dir>/results.jsonl``."""
    from autorl_records.results import append_result

    append_result(event.run_dir)
