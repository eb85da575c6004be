"""What a chat-API driver's tests share: the ``fake`` and ``env`` fixtures, and the messages.

A driver plugin's tests talk real HTTP to :class:`autorl_llm.testing.FakeProvider` (a local
stand-in for the OpenAI, Anthropic and Gemini APIs) and hand the driver an environment naming
its key and base URL; :class:`~autorl_testing.DriverConformance` reads that ``env`` fixture too.
In the driver's ``tests/conftest.py``::

    from autorl_testing.providers import fake_provider_fixtures

    fake, env = fake_provider_fixtures(
        "anthropic", api_key="sk-ant-test", key_var="ANTHROPIC_API_KEY",
        url_var="ANTHROPIC_BASE_URL",
    )
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from autorl_llm.testing import FakeProvider

USER: list[dict[str, Any]] = [{"role": "user", "content": "What is two plus two?"}]
"""A one-turn conversation for a driver's ``complete``."""
TOOLS: list[dict[str, Any]] = [
    {"name": "bash", "description": "run", "parameters": {"type": "object"}}
]
"""One tool, in the harness's neutral format, for a driver to translate."""
FAST: dict[str, Any] = {"initial_delay_s": 0.01, "jitter": 0.0}
"""Retry options that keep a test of retries short."""


def tool_round_trip(call_id: str = "c1", text: str = "") -> list[dict[str, Any]]:
    """:data:`USER`, the assistant's ``bash`` call ``echo 4`` (id ``call_id``, said with
    ``text``) and the tool's answer ``4``: a history whose tool call and result a driver must
    send in its API's format."""
    call = {"id": call_id, "name": "bash", "arguments": {"command": "echo 4"}}
    return [
        *USER,
        {"role": "assistant", "content": text, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": "4"},
    ]


def fake_provider_fixtures(
    api: str, *, api_key: str, key_var: str, url_var: str
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Pytest fixtures ``fake`` (a live FakeProvider per test) and ``env`` (its key and URL).

    ``api`` is the wire format the driver speaks (``openai``, ``anthropic`` or ``gemini``): the
    provider's ``<api>_base_url`` goes into ``url_var``. Assign both names in a conftest or test
    module so pytest finds them.
    """

    @pytest.fixture
    def fake() -> Iterator[FakeProvider]:
        # autorl-llm is the driver's own dependency, not the testing kit's
        from autorl_llm.testing import FakeProvider

        with FakeProvider(api_key=api_key) as provider:
            yield provider

    @pytest.fixture
    def env(fake: FakeProvider) -> dict[str, str]:
        return {key_var: api_key, url_var: getattr(fake, f"{api}_base_url")}

    return fake, env
