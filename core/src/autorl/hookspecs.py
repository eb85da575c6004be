"""The hook specifications every autorl plugin implements a subset of.

Registration hooks return lists of frozen specs (never live objects); observer hooks take one
frozen event. Hook implementations must not declare defaulted arguments: pluggy never passes them.
"""

from __future__ import annotations

import pluggy

from autorl.events import RecordContribution, RunEndEvent, RunStartEvent, SubmissionEvent
from autorl.kinds import KINDS
from autorl.specs import (
    AgentSpec,
    CommandSpec,
    DriverSpec,
    EgressSpec,
    EvaluatorSpec,
    ExecutorSpec,
    GatewaySpec,
    GraderSpec,
    ModelSpec,
    ReportSpec,
    RuntimeSpec,
    SandboxSpec,
    SearchBackendSpec,
    TaskSpec,
)

PROJECT = "autorl"
hookspec = pluggy.HookspecMarker(PROJECT)


@hookspec
def autorl_register_tasks() -> list[TaskSpec]:
    """Tasks: a train split the agent sees, an eval split it never sees, and an evaluator."""


@hookspec
def autorl_register_agents() -> list[AgentSpec]:
    """Agent adapters: how to launch a scaffold (or a scripted recipe) inside a workspace."""


@hookspec
def autorl_register_evaluators() -> list[EvaluatorSpec]:
    """Evaluators: score a checkpoint on a task's held-out split."""


@hookspec
def autorl_register_reports() -> list[ReportSpec]:
    """Reports: render a finished run from the harness's own records."""


@hookspec
def autorl_register_drivers() -> list[DriverSpec]:
    """Driver backends for LLMs, addressed as ``<backend>/<model>``."""


@hookspec
def autorl_register_models() -> list[ModelSpec]:
    """Base models that a run can start from."""


@hookspec
def autorl_register_sandboxes() -> list[SandboxSpec]:
    """Sandboxes that isolate the agent's processes from the harness."""


@hookspec
def autorl_register_executors() -> list[ExecutorSpec]:
    """Executors that run a matrix of runs (in order, in parallel, on a cluster)."""


@hookspec
def autorl_register_commands() -> list[CommandSpec]:
    """Extra ``autorl`` subcommands, each a lazily imported ``click.Command``."""


@hookspec
def autorl_register_search_backends() -> list[SearchBackendSpec]:
    """Search backends (``search(query, k)``) that search-using tasks such as DeepSearchQA use."""


@hookspec
def autorl_register_gateways() -> list[GatewaySpec]:
    """The LLM gateway that opens driver backends and serves them to agents (``autorl-llm``)."""


@hookspec
def autorl_register_graders() -> list[GraderSpec]:
    """Checkpoint intake and the grading API every run serves its agent (``autorl-grading``)."""


@hookspec
def autorl_register_runtimes() -> list[RuntimeSpec]:
    """Builders of the agent's Python environment (``autorl-sandbox-common``: ``harness``)."""


@hookspec
def autorl_register_egress() -> list[EgressSpec]:
    """The agent's way out, one per egress policy (``autorl-sandbox-common``: ``allowlist``)."""


@hookspec
def autorl_on_run_start(event: RunStartEvent) -> None:
    """Called once the manifest is written and before the agent starts."""


@hookspec
def autorl_on_submission(event: SubmissionEvent) -> None:
    """Called whenever a submission changes status (received, scored, failed...)."""


@hookspec
def autorl_on_run_end(event: RunEndEvent) -> None:
    """Called after the final report is written."""


@hookspec
def autorl_contribute_to_record(event: RunEndEvent) -> RecordContribution | None:
    """Once a run ended, before its reports: a plugin's results about the run (read from the
    run directory), kept in the run record under the contribution's name; None for nothing."""


REGISTRATION_HOOKS: dict[str, str] = {name: kind.hook for name, kind in KINDS.items()}
"""Kind -> its registration hook, from :mod:`autorl.kinds`."""
