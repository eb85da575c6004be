"""The registry spec of a CLI adapter, for its ``plugin.py``.

What every adapter's spec says alike lives here once: it needs a driver (the CLI talks to the
run's LLM gateway in one provider protocol), it installs a pinned package on demand, and it
writes the common trajectory (:data:`~autorl_agent_cli_common.trajectory.TRAJECTORY_FILE`).
Light: imported when the entry point loads, it imports only the spec type and that constant.
"""

from __future__ import annotations

from autorl.specs import AgentSpec
from autorl_agent_cli_common.trajectory import TRAJECTORY_FILE


def cli_agent_spec(
    name: str,
    factory: str,
    cli: str,
    *,
    protocol: str,
    package: str,
    note: str = "installed on demand",
) -> AgentSpec:
    """The spec of the adapter ``name`` (``factory`` its class) for ``cli`` (the CLI, its
    version and headless mode, as the description opens), speaking ``protocol`` to the gateway,
    installing ``package`` (``npm <name>@<version>`` or ``pypi <name>==<version>``)."""
    return AgentSpec(
        name=name,
        factory=factory,
        description=f"{cli} through the run's LLM gateway; {note}",
        trajectory=TRAJECTORY_FILE,
        options={"driver": True, "protocol": protocol, "package": package},
    )
