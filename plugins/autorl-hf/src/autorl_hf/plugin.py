"""Entry point: registers the ``hf`` model and the ``autorl engine`` command (no heavy imports)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import CommandSpec, ModelSpec


@hookimpl
def autorl_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec(
            name="engine",
            factory="autorl_hf.engine.commands:engine",
            description="Build and inspect the vLLM CPU inference engine's environment.",
        )
    ]


@hookimpl
def autorl_register_models() -> list[ModelSpec]:
    return [
        ModelSpec(
            name="hf",
            factory="autorl_hf.model:HFDirectoryModel",
            description="Any local Hugging Face model directory (--model /path/to/dir), "
            "or a hub id when online (--model hf:org/name).",
        )
    ]
