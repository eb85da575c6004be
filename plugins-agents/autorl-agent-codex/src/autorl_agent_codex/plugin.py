"""Entry point: registers the `codex` agent (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        AgentSpec(
            name="codex",
            factory="autorl_agent_codex.agent:CodexAgent",
            description="Codex CLI 0.169.0 headless (codex exec) through the run's LLM "
            "gateway; installed on demand",
            trajectory="agent_trajectory.jsonl",  # the CLI adapters' common trajectory
            options={
                "driver": True,
                "protocol": "openai-responses",
                "package": "npm @openai/codex@0.169.0",
            },
        )
    ]
