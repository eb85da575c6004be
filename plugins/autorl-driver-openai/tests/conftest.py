"""A live fake provider (real HTTP on 127.0.0.1) for each test."""

from __future__ import annotations

from autorl_testing.providers import fake_provider_fixtures

KEY = "sk-test-openai"

fake, env = fake_provider_fixtures(
    "openai", api_key=KEY, key_var="OPENAI_API_KEY", url_var="OPENAI_BASE_URL"
)
