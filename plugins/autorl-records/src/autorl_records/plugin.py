"""Entry point: registers ``autorl report`` and ``autorl runs`` (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import CommandSpec


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
