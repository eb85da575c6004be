"""A live fake provider (real HTTP on 127.0.0.1) for each test."""

from __future__ import annotations

from autorl_testing.providers import fake_provider_fixtures

KEY = "sk-ant-test"

fake, env = fake_provider_fixtures(
    "anthropic", api_key=KEY, key_var="ANTHROPIC_API_KEY", url_var="ANTHROPIC_BASE_URL"
)
