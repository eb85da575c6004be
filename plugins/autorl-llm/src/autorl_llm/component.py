"""The ``llm`` gateway component: what the engine asks the registry for when a run has a
driver (the core imports nothing of this distribution)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class LLMGateway:
    name = "llm"

    def open_driver(self, name: str, options: Mapping[str, Any], registry: Any) -> Any:
        from autorl_llm.drivers.names import open_driver

        return open_driver(name, registry=registry, **dict(options))

    def serve(self, driver: Any, **settings: Any) -> Any:
        from autorl_llm.gateway import Gateway

        return Gateway(driver, **settings).start()
