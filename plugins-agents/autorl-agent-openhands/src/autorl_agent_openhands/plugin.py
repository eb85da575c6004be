"""Entry point: registers the `openhands` agent (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        AgentSpec(
            name="openhands",
            factory="autorl_agent_openhands.agent:OpenHandsAgent",
            description="OpenHands CLI 1.16.0 headless (Python 3.12 venv) through the run's LLM "
            "gateway; installed on demand",
            trajectory="agent_trajectory.jsonl",  # the CLI adapters' common trajectory
            options={
                "driver": True,
                "protocol": "openai-chat",
                "package": "pypi openhands==1.16.0",
            },
        )
    ]
