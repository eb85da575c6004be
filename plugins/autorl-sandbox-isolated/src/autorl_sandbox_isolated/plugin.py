"""Entry point: registers the ``isolated`` sandbox, the default (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import SandboxSpec


@hookimpl
def autorl_register_sandboxes() -> list[SandboxSpec]:
    return [
        SandboxSpec(
            name="isolated",
            factory="autorl_sandbox_isolated.sandbox:IsolatedSandbox",
            description="The default: bubblewrap namespaces (mount, PID, network with only the "
            "forwarded grader/gateway ports), its own uid without capabilities, cgroup limits; "
            "nothing of the run's records, caches or harness code is visible.",
            options={
                "needs": "bubblewrap (apt-get install -y bubblewrap), cgroups, root for "
                "a separate uid"
            },
        ),
    ]
