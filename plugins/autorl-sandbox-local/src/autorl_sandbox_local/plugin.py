"""Registers the ``local`` sandbox (no heavy imports: the factory is imported only when used)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import SandboxSpec


@hookimpl
def autorl_register_sandboxes() -> list[SandboxSpec]:
    return [
        SandboxSpec(
            name="local",
            factory="autorl_sandbox_local.sandbox:LocalSandbox",
            description="DEVELOPMENT ONLY, not a boundary: same user, whole file system visible; "
            "clean environment, every descendant killed at the deadline. Scores not comparable.",
            install="autorl-sandbox-local",
        ),
    ]
