"""The one table of component kinds. Everything per kind is derived from it: the spec classes
(``autorl.specs``), the registration hooks (``autorl.hookspecs``), the protocols checked on
creation (``autorl.protocols``), the pip prefix in hints (``autorl.registry``), the plural in
the CLI, the conformance classes (``autorl_testing``) and the docs (a test checks hooks.md).
Adding a kind is one row here plus its spec, hook, protocol and conformance class."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    name: str
    hook: str
    """The registration hook plugins implement (``autorl_register_<plural>``)."""
    spec: str
    """The spec class in ``autorl.specs``."""
    protocol: str | None
    """The protocol in ``autorl.protocols`` instances are checked against (None: not built)."""
    conformance: str | None
    """The conformance class in ``autorl_testing``."""
    pip_prefix: str | None
    """Conventional distribution prefix, for "install it" hints (None where a component's
    name is not part of its distribution's: the harness services, commands)."""
    plural: str = ""

    def __post_init__(self) -> None:
        if not self.plural:
            object.__setattr__(self, "plural", f"{self.name}s")


TABLE: tuple[Kind, ...] = (
    Kind("task", "autorl_register_tasks", "TaskSpec", "Task", "TaskConformance",
         "autorl-task-"),
    Kind("agent", "autorl_register_agents", "AgentSpec", "Agent", "AgentConformance",
         "autorl-agent-"),
    Kind("evaluator", "autorl_register_evaluators", "EvaluatorSpec", "Evaluator",
         "EvaluatorConformance", "autorl-evaluator-"),
    Kind("report", "autorl_register_reports", "ReportSpec", "Report", "ReportConformance",
         "autorl-report-"),
    Kind("driver", "autorl_register_drivers", "DriverSpec", "Driver", "DriverConformance",
         "autorl-driver-"),
    Kind("model", "autorl_register_models", "ModelSpec", "Model", "ModelConformance",
         "autorl-model-"),
    Kind("sandbox", "autorl_register_sandboxes", "SandboxSpec", "Sandbox",
         "SandboxConformance", "autorl-sandbox-", plural="sandboxes"),
    Kind("executor", "autorl_register_executors", "ExecutorSpec", "Executor",
         "ExecutorConformance", "autorl-executor-"),
    Kind("command", "autorl_register_commands", "CommandSpec", None, None, None),
    Kind("search_backend", "autorl_register_search_backends", "SearchBackendSpec",
         "SearchBackend", "SearchBackendConformance", "autorl-search-"),
    Kind("gateway", "autorl_register_gateways", "GatewaySpec", "Gateway", "GatewayConformance",
         None),
    Kind("grader", "autorl_register_graders", "GraderSpec", "Grader", "GraderConformance",
         None),
    Kind("runtime", "autorl_register_runtimes", "RuntimeSpec", "AgentRuntime",
         "RuntimeConformance", None),
    Kind("egress", "autorl_register_egress", "EgressSpec", "Egress", "EgressConformance",
         None, plural="egress"),
)  # fmt: skip
KINDS: dict[str, Kind] = {kind.name: kind for kind in TABLE}
NAMES: tuple[str, ...] = tuple(KINDS)
PLURALS: dict[str, str] = {kind.plural: kind.name for kind in TABLE}
