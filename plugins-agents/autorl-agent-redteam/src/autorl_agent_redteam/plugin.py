"""Entry point: registers the `redteam` agent (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        AgentSpec(
            name="redteam",
            factory="autorl_agent_redteam.agent:RedteamAgent",
            description="Security self-test for sandbox authors and CI, not a real agent: "
            "attacks the harness from inside the sandbox (forged records, held-out reads, "
            "keys, harness writes, signals, network, grading-API abuse, resources, a detached "
            "daemon) and writes code/redteam/results.json; trains nothing",
            options={"driver": False, "self_test": True},
        )
    ]
