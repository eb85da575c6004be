"""Entry point: registers the ``vllm`` driver backend (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import DriverSpec


@hookimpl
def autorl_register_drivers() -> list[DriverSpec]:
    return [
        DriverSpec(
            name="vllm",
            factory="autorl_driver_vllm.driver:VLLMDriver",
            description="open-weight models (vllm/Qwen/Qwen3-32B) behind a vLLM OpenAI-compatible "
            "server: base_url option or VLLM_BASE_URL, or serve=True to start one (a GPU, else "
            "autorl's vLLM CPU engine: vllm/smollm2-135m)",
            install="autorl-driver-vllm",
            options={"env": ["VLLM_BASE_URL", "VLLM_API_KEY"], "local": True},
        )
    ]
