"""Entry point: registers the ``openai`` driver backend (no SDK import here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import DriverSpec


@hookimpl
def autorl_register_drivers() -> list[DriverSpec]:
    return [
        DriverSpec(
            name="openai",
            factory="autorl_driver_openai.driver:OpenAIDriver",
            description="OpenAI models (openai/gpt-5.2) via the official SDK; Chat Completions, "
            "or Responses with api='responses'; key from OPENAI_API_KEY",
            install="autorl-driver-openai",
            options={"env": ["OPENAI_API_KEY", "OPENAI_BASE_URL"], "apis": ["chat", "responses"]},
        )
    ]
