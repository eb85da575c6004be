"""Entry point: registers the ``harness`` runtime, the ``allowlist`` egress proxy and the
``autorl sandbox`` command (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import CommandSpec, EgressSpec, RuntimeSpec


@hookimpl
def autorl_register_runtimes() -> list[RuntimeSpec]:
    return [
        RuntimeSpec(
            name="harness",
            factory="autorl_sandbox_common.components:HarnessRuntime",
            description="The training stack and its dependency closure, linked offline from "
            "the harness's own environment, without any autorl package",
        )
    ]


@hookimpl
def autorl_register_egress() -> list[EgressSpec]:
    return [
        EgressSpec(
            name="allowlist",
            factory="autorl_sandbox_common.components:AllowlistEgress",
            description="An HTTP(S) proxy that lets the agent reach only the allowed hosts and "
            "logs every request to egress.jsonl (TLS is not intercepted)",
        )
    ]


@hookimpl
def autorl_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec(
            name="sandbox",
            factory="autorl_sandbox_common.commands:sandbox",
            description="Check the sandboxes on this machine; build the agent runtime.",
        )
    ]
