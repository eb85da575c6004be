"""Entry point: registers the ``llm`` gateway (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import GatewaySpec


@hookimpl
def autorl_register_gateways() -> list[GatewaySpec]:
    return [
        GatewaySpec(
            name="llm",
            factory="autorl_llm.component:LLMGateway",
            description="Opens driver backends by <backend>/<model> and serves the run's driver "
            "to its agent on 127.0.0.1 in the providers' wire formats, metering tokens and cost",
        )
    ]
