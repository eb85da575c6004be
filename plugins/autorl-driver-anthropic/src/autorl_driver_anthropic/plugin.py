"""Entry point: registers the ``anthropic`` driver backend (no SDK import here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import DriverSpec


@hookimpl
def autorl_register_drivers() -> list[DriverSpec]:
    return [
        DriverSpec(
            name="anthropic",
            factory="autorl_driver_anthropic.driver:AnthropicDriver",
            description="Claude models (anthropic/claude-sonnet-4-6) via the official SDK "
            "(Messages API); key from ANTHROPIC_API_KEY",
            install="autorl-driver-anthropic",
            options={"env": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]},
        )
    ]
