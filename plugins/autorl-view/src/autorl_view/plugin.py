"""Entry point: registers ``autorl view`` (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import CommandSpec


@hookimpl
def autorl_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec(
            name="view",
            factory="autorl_view.cli:view",
            description="Browse runs and campaigns in a local web app (live while they run).",
        )
    ]
