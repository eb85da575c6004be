"""Entry point: registers the `opencode` agent (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        AgentSpec(
            name="opencode",
            factory="autorl_agent_opencode.agent:OpenCodeAgent",
            description="OpenCode 1.18.33 headless (opencode run) through the run's LLM "
            "gateway; installed on demand",
            trajectory="agent_trajectory.jsonl",  # the CLI adapters' common trajectory
            options={
                "driver": True,
                "protocol": "openai-chat",
                "package": "npm opencode-ai@1.18.33",
            },
        )
    ]
