"""Entry point: registers the `react` agent (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        AgentSpec(
            name="react",
            factory="autorl_agent_react.agent:ReactAgent",
            description="autorl's own tool-using loop (shell, read_file, write_file, submit, "
            "check_budget) driven by any --driver through the LLM gateway",
            trajectory="home/react-trajectory.jsonl",  # written by the agent: hostile data
            options={"driver": True},
        )
    ]
