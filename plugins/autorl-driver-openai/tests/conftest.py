"""A live fake provider (real HTTP on 127.0.0.1) for each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from autorl_llm.testing import FakeProvider

KEY = "sk-test-openai"


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(api_key=KEY) as provider:
        yield provider


@pytest.fixture
def env(fake: FakeProvider) -> dict[str, str]:
    return {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": fake.openai_base_url}
