"""Entry point: registers the `openhands` agent (no heavy imports here)."""

from __future__ import annotations

from autorl_agent_cli_common.spec import cli_agent_spec

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        cli_agent_spec(
            "openhands",
            "autorl_agent_openhands.agent:OpenHandsAgent",
            "OpenHands CLI 1.16.0 headless (Python 3.12 venv)",
            protocol="openai-chat",
            package="pypi openhands==1.16.0",
        )
    ]
