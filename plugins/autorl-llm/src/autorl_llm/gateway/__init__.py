"""The metering LLM gateway: agents call their provider's API here; the harness's driver answers.

See docs/gateway.md. FastAPI and uvicorn are imported only when a gateway starts.
"""

from __future__ import annotations

from autorl_llm.gateway.budget import DriverBudget
from autorl_llm.gateway.server import Gateway

__all__ = ["DriverBudget", "Gateway"]
