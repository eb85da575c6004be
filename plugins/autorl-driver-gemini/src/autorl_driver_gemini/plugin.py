"""Entry point: registers the ``gemini`` driver backend (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import DriverSpec


@hookimpl
def autorl_register_drivers() -> list[DriverSpec]:
    return [
        DriverSpec(
            name="gemini",
            factory="autorl_driver_gemini.driver:GeminiDriver",
            description="Gemini models (gemini/gemini-2.5-flash) over the generateContent REST "
            "API; key from GEMINI_API_KEY or GOOGLE_API_KEY",
            install="autorl-driver-gemini",
            options={"env": ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"]},
        )
    ]
