"""Entry point: registers the `scripted` agent (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        AgentSpec(
            name="scripted",
            factory="autorl_agent_scripted.agent:ScriptedAgent",
            description="No LLM: copies the reference recipe the task ships (TaskSpec.recipe: "
            "SFT then GRPO, sized to the budget) into code/ and runs it",
            options={"driver": False},
        )
    ]
