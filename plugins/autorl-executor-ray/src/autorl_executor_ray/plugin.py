"""Entry point: the ``ray`` executor (no heavy imports: Ray loads only when cells run)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import ExecutorSpec


@hookimpl
def autorl_register_executors() -> list[ExecutorSpec]:
    return [
        ExecutorSpec(
            name="ray",
            factory="autorl_executor_ray.executor:RayExecutor",
            description="each cell a Ray task (CPU/GPU slots, retried when its node dies): "
            "a local Ray instance or a cluster",
            install="autorl-executor-ray",
        )
    ]
