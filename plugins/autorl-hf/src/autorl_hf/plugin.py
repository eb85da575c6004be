"""Entry point: registers the ``autorl engine`` command (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import CommandSpec


@hookimpl
def autorl_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec(
            name="engine",
            factory="autorl_hf.engine.commands:engine",
            description="Build and inspect the vLLM CPU inference engine's environment.",
        )
    ]
