"""Entry point of the test agents (made visible to ``autorl run`` by a hand-written
``.dist-info`` on ``PYTHONPATH``, see the tests' conftest)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import AgentSpec


@hookimpl
def autorl_register_agents() -> list[AgentSpec]:
    return [
        AgentSpec(
            name="analysis-test",
            factory="autorl_analysis_testagents.agent:TestAgent",
            description="analysis test agent; agent option behaviour = leaker (held-out data "
            "into code/), copycat (the base with a new header; probes the grader) or oomer "
            "(a batch too large for memory)",
        )
    ]
