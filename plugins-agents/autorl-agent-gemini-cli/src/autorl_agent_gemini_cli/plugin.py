"""Entry point: registers the `gemini-cli` agent (no heavy imports here)."""

from __future__ import annotations

from autorl_agent_cli_common.spec import cli_agent_spec

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        cli_agent_spec(
            "gemini-cli",
            "autorl_agent_gemini_cli.agent:GeminiCliAgent",
            "Gemini CLI 0.61.0 headless (gemini -p)",
            protocol="gemini",
            package="npm @google/gemini-cli@0.61.0",
        )
    ]
