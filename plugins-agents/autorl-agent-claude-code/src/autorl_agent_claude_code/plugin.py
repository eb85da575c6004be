"""Entry point: registers the `claude-code` agent (no heavy imports here)."""

from __future__ import annotations

from autorl_agent_cli_common.spec import cli_agent_spec

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        cli_agent_spec(
            "claude-code",
            "autorl_agent_claude_code.agent:ClaudeCodeAgent",
            "Claude Code 2.1.330 headless (claude -p)",
            protocol="anthropic-messages",
            package="npm @anthropic-ai/claude-code@2.1.330",
            note="modes free, sft-only, rl-oriented",
        )
    ]
