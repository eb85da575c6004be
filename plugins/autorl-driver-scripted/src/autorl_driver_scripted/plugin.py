"""Entry point: registers the ``scripted`` driver backend (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import DriverSpec


@hookimpl
def autorl_register_drivers() -> list[DriverSpec]:
    return [
        DriverSpec(
            name="scripted",
            factory="autorl_driver_scripted.driver:ScriptedDriver",
            description="deterministic offline answers from a YAML/JSON script "
            "(scripted/<path-to-script>); every answer is marked scripted",
            options={"network": False, "scripted": True},
        )
    ]
