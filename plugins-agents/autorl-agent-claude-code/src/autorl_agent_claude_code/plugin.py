"""Entry point: registers the `claude-code` agent (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        AgentSpec(
            name="claude-code",
            factory="autorl_agent_claude_code.agent:ClaudeCodeAgent",
            description="Claude Code 2.1.330 headless (claude -p) through the run's LLM "
            "gateway; modes free, sft-only, rl-oriented",
            trajectory="agent_trajectory.jsonl",  # the CLI adapters' common trajectory
            options={
                "driver": True,
                "protocol": "anthropic-messages",
                "package": "npm @anthropic-ai/claude-code@2.1.330",
            },
        )
    ]
