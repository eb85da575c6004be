"""Entry point: registers the ``api`` grader (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import GraderSpec


@hookimpl
def autorl_register_graders() -> list[GraderSpec]:
    return [
        GraderSpec(
            name="api",
            factory="autorl_grading.component:Grading",
            description="Copies each submitted checkpoint out of the workspace, validates and "
            "fingerprints it without torch, queues it for evaluation and serves the grading "
            "API on 127.0.0.1 with the run's bearer token",
        )
    ]
