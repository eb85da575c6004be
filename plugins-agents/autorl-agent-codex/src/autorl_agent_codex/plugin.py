"""Entry point: registers the `codex` agent (no heavy imports here)."""

from __future__ import annotations

from autorl_agent_cli_common.spec import cli_agent_spec

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        cli_agent_spec(
            "codex",
            "autorl_agent_codex.agent:CodexAgent",
            "Codex CLI 0.169.0 headless (codex exec)",
            protocol="openai-responses",
            package="npm @openai/codex@0.169.0",
        )
    ]
