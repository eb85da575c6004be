"""The one table of component kinds. Everything per kind is derived from it: the spec classes
(``autorl.specs``), the registration hooks (``autorl.hookspecs``), the protocols checked on
creation (``autorl.protocols``), the distribution naming convention, the plural in the CLI,
the conformance classes (``autorl_testing``) and the docs (a test checks hooks.md). Adding a
kind is one row here plus its spec, hook, protocol and conformance class. :data:`SHIPPED` says
which of autorl's distributions provides each of its components (what install hints name)."""

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
    """Conventional distribution prefix of a plugin offering one component of this kind (None
    where a component's name is not part of its distribution's: the harness services,
    commands). Install hints never build a name from it: they name :data:`SHIPPED`'s."""
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


def _conventional(kind: str, *names: str) -> dict[str, str]:
    """Components each in a distribution named by the convention (``autorl-task-gsm8k``)."""
    return {name: f"{KINDS[kind].pip_prefix}{name}" for name in names}


SHIPPED: dict[str, dict[str, str]] = {
    "task": _conventional(
        "task", "gsm8k", "humaneval", "alpacaeval", "alfworld", "webshop", "deepsearchqa"
    ),
    "agent": _conventional(
        "agent", "scripted", "react", "redteam", "claude-code", "codex", "gemini-cli",
        "opencode", "openhands",
    ),
    "evaluator": _conventional("evaluator", "exact", "code", "judge", "rollout"),
    "report": {**_conventional("report", "basic"), "analysis": "autorl-analysis"},
    "driver": _conventional("driver", "openai", "anthropic", "gemini", "vllm", "scripted"),
    "model": {**_conventional("model", "tiny"), "smollm2-135m": "autorl-model-smollm2",
              "hf": "autorl-hf"},
    "sandbox": _conventional("sandbox", "isolated", "docker", "local"),
    "executor": {**_conventional("executor", "ray"), "local": "autorl", "pool": "autorl-campaign"},
    "command": {"run": "autorl-runner", "prepare": "autorl-runner",
                "runs": "autorl-records", "report": "autorl-records",
                "campaign": "autorl-campaign", "compare": "autorl-campaign",
                "reference": "autorl-campaign", "engine": "autorl-hf",
                "sandbox": "autorl-sandbox-common", "agent-cli": "autorl-agent-cli-common",
                "view": "autorl-view"},
    "search_backend": {"bm25": "autorl-task-deepsearchqa", "brave": "autorl-task-deepsearchqa"},
    "gateway": {"llm": "autorl-llm"},
    "grader": {"api": "autorl-grading"},
    "runtime": {"harness": "autorl-sandbox-common"},
    "egress": {"allowlist": "autorl-sandbox-common"},
}  # fmt: skip
"""The components autorl's own distributions provide: kind -> name -> distribution. Install
hints name a distribution from here, never one made from a name (``autorl-report-`` +
``analysis`` does not exist; a typo'd name is a typosquatting invitation). A test checks it
against what the repository's distributions register and against their pyproject names."""


def shipped_distribution(kind: str, name: str) -> str | None:
    """The distribution of autorl's that provides ``kind`` ``name``, None for any other name."""
    return SHIPPED.get(kind, {}).get(name)
