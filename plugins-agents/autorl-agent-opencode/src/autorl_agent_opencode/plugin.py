"""Entry point: registers the `opencode` agent (no heavy imports here)."""

from __future__ import annotations

from autorl_agent_cli_common.spec import cli_agent_spec

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        cli_agent_spec(
            "opencode",
            "autorl_agent_opencode.agent:OpenCodeAgent",
            "OpenCode 1.18.33 headless (opencode run)",
            protocol="openai-chat",
            package="npm opencode-ai@1.18.33",
        )
    ]
