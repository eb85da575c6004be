"""The ``api`` grader through the registry, as the engine reaches it."""

from __future__ import annotations

from autorl_testing import GraderConformance


class TestGrading(GraderConformance):
    plugin_module = "autorl_grading.plugin"
