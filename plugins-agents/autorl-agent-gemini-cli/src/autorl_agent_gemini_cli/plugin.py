"""Entry point: registers the `gemini-cli` agent (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        AgentSpec(
            name="gemini-cli",
            factory="autorl_agent_gemini_cli.agent:GeminiCliAgent",
            description="Gemini CLI 0.61.0 headless (gemini -p) through the run's LLM "
            "gateway; installed on demand",
            trajectory="agent_trajectory.jsonl",  # the CLI adapters' common trajectory
            options={
                "driver": True,
                "protocol": "gemini",
                "package": "npm @google/gemini-cli@0.61.0",
            },
        )
    ]
