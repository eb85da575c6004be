"""A live fake provider (real HTTP on 127.0.0.1) for each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from autorl_llm.testing import FakeProvider

KEY = "sk-ant-test"


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(api_key=KEY) as provider:
        yield provider


@pytest.fixture
def env(fake: FakeProvider) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.anthropic_base_url}
