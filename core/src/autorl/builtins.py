"""Components that ship with the core, registered through the same entry-point path as any plugin
(entry point ``autorl``), so ``AUTORL_BLOCK_PLUGINS=autorl`` can block them too."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import ExecutorSpec


@hookimpl
def autorl_register_executors() -> list[ExecutorSpec]:
    return [
        ExecutorSpec(
            name="local",
            factory="autorl.executors:SerialExecutor",
            description="Runs a matrix of runs one after another in this process.",
        )
    ]
