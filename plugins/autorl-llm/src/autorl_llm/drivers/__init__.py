"""Driver LLM backends' shared layer: request/response model, retries, call log, cassettes.

Light on purpose (standard library and httpx only): backends live in their own distributions
(``autorl-driver-openai``...) and import their SDK lazily. See docs/drivers.md.
"""

from __future__ import annotations

from autorl_llm.drivers.base import BaseDriver, ChatMixin
from autorl_llm.drivers.calllog import DriverCallLog, LoggingDriver
from autorl_llm.drivers.cassette import Cassette, RecordingDriver, ReplayingDriver
from autorl_llm.drivers.errors import (
    CassetteMissError,
    DriverAPIError,
    DriverConfigError,
    DriverError,
    DriverRequestError,
    DriverTimeoutError,
    DriverUnavailableError,
)
from autorl_llm.drivers.names import open_driver, parse_driver_name
from autorl_llm.drivers.pricing import cost_usd, price_of
from autorl_llm.drivers.retry import RetryPolicy, TransientError
from autorl_llm.drivers.types import (
    ChatChunk,
    ChatRequest,
    ChatResponse,
    ToolCall,
    Usage,
    request_key,
)
from autorl_llm.drivers.usage import estimate_tokens

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
