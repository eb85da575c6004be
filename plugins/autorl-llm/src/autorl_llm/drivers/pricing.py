"""A small per-model price table, so every call and report carries a cost in US dollars.

Prices are list prices per million tokens (input, output) for standard, non-batch, non-cached
use, as published by the providers. They drift: a run may pass its own with the driver option
``prices={"input": .., "output": ..}``. Unknown and local models cost 0 (and say so in docs).
"""

from __future__ import annotations

from collections.abc import Mapping

from autorl_llm.drivers.errors import DriverConfigError
from autorl_llm.drivers.types import Usage

# (USD per 1M input tokens, USD per 1M output tokens); matched by longest prefix, so dated
# snapshots ("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06") find their family.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    # OpenAI
    "gpt-5.2": (1.75, 14.0),
    "gpt-5.1": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-5": (1.25, 10.0),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.0),
    "o3": (2.0, 8.0),
    "o4-mini": (1.10, 4.40),
    # Anthropic
    "claude-opus-4-6": (5.0, 25.0),
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-3-5-haiku": (0.80, 4.0),
    # Google
    "gemini-2.5-pro": (1.25, 10.0),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.0-flash": (0.10, 0.40),
}


def price_of(model: str) -> tuple[float, float] | None:
    """The (input, output) price per 1M tokens of ``model``, or None when unknown."""
    name = model.rsplit("/", 1)[-1].lower()
    best = max((p for p in PRICES_PER_MTOK if name.startswith(p)), key=len, default=None)
    return PRICES_PER_MTOK[best] if best else None


def parse_prices(prices: Mapping[str, float] | None, where: str) -> tuple[float, float] | None:
    """Validate a ``prices={"input": .., "output": ..}`` driver option (USD per 1M tokens)."""
    if prices is None:
        return None
    try:
        pin, pout = float(prices["input"]), float(prices["output"])
    except (KeyError, TypeError, ValueError) as exc:
        raise DriverConfigError(
            f"{where}: option prices={prices!r} is invalid ({exc!r})",
            hint='give USD per million tokens: prices={"input": 3.0, "output": 15.0}',
        ) from exc
    if pin < 0 or pout < 0:
        raise DriverConfigError(f"{where}: prices must be >= 0, got {prices!r}")
    return pin, pout


def cost_usd(model: str, usage: Usage, prices: tuple[float, float] | None = None) -> float:
    """Dollar cost of one call: explicit ``prices`` first, then the table, else 0."""
    pin, pout = prices or price_of(model) or (0.0, 0.0)
    return round((usage.input_tokens * pin + usage.output_tokens * pout) / 1e6, 8)
