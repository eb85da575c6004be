"""Provider wire formats (OpenAI Chat/Responses, Anthropic Messages, Gemini), both directions.

``parse`` reads a provider request into a :class:`~autorl_llm.drivers.types.ChatRequest`; ``render``
writes an answer as that provider's JSON or SSE stream. The fake provider and the gateway share
them, so tests of one cover the formats of the other. Importing this package needs no SDK.
"""

from __future__ import annotations

from autorl_llm.drivers.wire.parse import (
    ParsedRequest,
    parse_anthropic,
    parse_gemini,
    parse_openai_chat,
    parse_openai_responses,
)
from autorl_llm.drivers.wire.render import APIS, WireCall, WireReply, as_stream, error_body

__all__ = [
    "APIS",
    "ParsedRequest",
    "WireCall",
    "WireReply",
    "as_stream",
    "error_body",
    "parse_anthropic",
    "parse_gemini",
    "parse_openai_chat",
    "parse_openai_responses",
]
