"""Testing kit for plugin authors: conformance base classes and an in-process registry.

Subclass a conformance class in your plugin's tests, name your hookimpl module (and the component,
when the module supplies more than one of that kind), and pytest runs the checks every plugin of
that kind must pass::

    from autorl_testing import TaskConformance

    class TestMyTask(TaskConformance):
        plugin_module = "autorl_task_mine.plugin"
        component = "mine"

The pytest fixtures ``autorl_registry`` and ``register_plugin`` (from
:mod:`autorl_testing.pytest_plugin`, loaded automatically once autorl-testing is installed)
register a plugin on a fresh registry without installing it.
"""

from __future__ import annotations

from autorl_testing.conformance import (
    AgentConformance,
    DriverConformance,
    EgressConformance,
    EvaluatorConformance,
    ExecutorConformance,
    GatewayConformance,
    GraderConformance,
    ModelConformance,
    PluginConformance,
    ReportConformance,
    RuntimeConformance,
    SandboxConformance,
    SearchBackendConformance,
    TaskConformance,
)
from autorl_testing.helpers import (
    HEAVY_MODULES,
    agent_context,
    evaluate_prepared,
    heavy_modules_imported_by,
    registry_with,
)

__all__ = [
    "HEAVY_MODULES",
    "AgentConformance",
    "DriverConformance",
    "EgressConformance",
    "EvaluatorConformance",
    "ExecutorConformance",
    "GatewayConformance",
    "GraderConformance",
    "ModelConformance",
    "PluginConformance",
    "ReportConformance",
    "RuntimeConformance",
    "SandboxConformance",
    "SearchBackendConformance",
    "TaskConformance",
    "agent_context",
    "evaluate_prepared",
    "heavy_modules_imported_by",
    "registry_with",
]
