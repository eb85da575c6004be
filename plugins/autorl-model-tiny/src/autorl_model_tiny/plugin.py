"""Entry point: registers the `tiny` model (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import ModelSpec


@hookimpl
def autorl_register_models() -> list[ModelSpec]:
    return [
        ModelSpec(
            name="tiny",
            factory="autorl_model_tiny.model:TinyModel",
            description="1.4 M-parameter Qwen2 chat model shipped in the package (tests, CI)",
            options={"parameters": "1.4M", "architecture": "qwen2", "offline": True},
        )
    ]
