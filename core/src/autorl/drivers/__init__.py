"""Driver LLM backends' shared layer: request/response model, retries, call log, cassettes.

Light on purpose (standard library and httpx only): backends live in their own distributions
(``autorl-driver-openai``...) and import their SDK lazily. See docs/drivers.md.
"""

from __future__ import annotations

from autorl.drivers.base import BaseDriver, ChatMixin
from autorl.drivers.calllog import DriverCallLog, LoggingDriver
from autorl.drivers.cassette import Cassette, RecordingDriver, ReplayingDriver
from autorl.drivers.errors import (
    CassetteMissError,
    DriverAPIError,
    DriverConfigError,
    DriverError,
    DriverRequestError,
    DriverTimeoutError,
    DriverUnavailableError,
)
from autorl.drivers.names import open_driver, parse_driver_name
from autorl.drivers.pricing import cost_usd, price_of
from autorl.drivers.retry import RetryPolicy, TransientError
from autorl.drivers.types import ChatChunk, ChatRequest, ChatResponse, ToolCall, Usage, request_key
from autorl.drivers.usage import estimate_tokens

__all__ = [
    "BaseDriver",
    "Cassette",
    "CassetteMissError",
    "ChatChunk",
    "ChatMixin",
    "ChatRequest",
    "ChatResponse",
    "DriverAPIError",
    "DriverCallLog",
    "DriverConfigError",
    "DriverError",
    "DriverRequestError",
    "DriverTimeoutError",
    "DriverUnavailableError",
    "LoggingDriver",
    "RecordingDriver",
    "ReplayingDriver",
    "RetryPolicy",
    "ToolCall",
    "TransientError",
    "Usage",
    "cost_usd",
    "estimate_tokens",
    "open_driver",
    "parse_driver_name",
    "price_of",
    "request_key",
]
