"""Entry point: registers the `docker` sandbox (no heavy imports here: not even the SDK)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import SandboxSpec


@hookimpl
def autorl_register_sandboxes() -> list[SandboxSpec]:
    return [
        SandboxSpec(
            name="docker",
            factory="autorl_sandbox_docker.sandbox:DockerSandbox",
            description="A container per agent (Docker Engine): an empty local image with the "
            "host's runtime bind-mounted read-only at the same paths, network none with only "
            "the forwarded grader/gateway ports, its own uid without capabilities, "
            "no-new-privileges, memory/pids/CPU limits; ends with the harness.",
            install="autorl-sandbox-docker",
            options={
                "needs": "a running Docker Engine (apt-get install -y docker.io; "
                "dockerd --bridge=none --iptables=false), root for a separate uid"
            },
        )
    ]
