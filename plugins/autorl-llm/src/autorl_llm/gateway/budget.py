"""The driver budget: tokens and dollars the agent may spend through the gateway.

Each call is charged what the backend reported (or estimated, for the scripted backend). A call
is served while the spend is below every limit; the call that crosses a limit completes and is
counted (its size is not known beforehand), every later call is refused. So a run overshoots a
limit by at most the calls in flight when it crossed (one, for an agent that calls sequentially),
and the report shows the exact spend. A stream the client abandons is charged an estimate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autorl_llm.drivers.types import ChatResponse

REASONS = {
    "token_budget": "the driver token budget is spent",
    "cost_budget": "the driver cost budget is spent",
}


@dataclass
class DriverBudget:
    """Thread-safe counters and limits; ``on_exhausted(reason, spend)`` fires once."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None
    on_exhausted: Callable[[str, dict[str, Any]], None] | None = None
    calls: int = 0
    refused: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    exhausted: str | None = None
    """None while calls are allowed, else 'token_budget' or 'cost_budget'."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def _over(self) -> str | None:
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return "token_budget"
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return "cost_budget"
        return None

    def refusal(self) -> str | None:
        """The message for a refused call, or None when the call may go ahead."""
        with self._lock:
            reason = self.exhausted or self._over()
            if reason is None:
                return None
            self.refused += 1
        return self.message(reason)

    def message(self, reason: str) -> str:
        if reason == "token_budget":
            spent = f"{self.tokens} of {self.max_tokens} tokens used"
        else:
            spent = f"${self.cost_usd:.4f} of ${self.max_cost_usd:.4f} used"
        return (
            f"autorl gateway: {REASONS[reason]} ({spent}); no more model calls are allowed in "
            "this run. Finish with what you have: submitted checkpoints keep their scores."
        )

    def charge(self, response: ChatResponse) -> None:
        fire = None
        with self._lock:
            self.calls += 1
            self.input_tokens += response.usage.input_tokens
            self.output_tokens += response.usage.output_tokens
            self.cost_usd += response.cost_usd
            if self.exhausted is None:
                self.exhausted = self._over()
                fire = self.exhausted
        if fire and self.on_exhausted is not None:
            self.on_exhausted(fire, self.spend())

    def spend(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "refused": self.refused,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "max_tokens": self.max_tokens,
            "max_cost_usd": self.max_cost_usd,
            "exhausted": self.exhausted,
        }
