"""Frozen specs that plugins return from registration hooks.

A spec names a component and says how to build it (``factory`` is an import string
``"package.module:Name"``) without importing it: listing plugins must stay fast and must
never pull in torch or an SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from autorl.contracts import ContractKind
from autorl.kinds import KINDS as KIND_TABLE
from autorl.kinds import NAMES

KINDS: tuple[str, ...] = NAMES
"""The kinds' names (the table is :mod:`autorl.kinds`)."""


@dataclass(frozen=True)
class Spec:
    """A component a plugin offers: a name and a lazily imported factory."""

    kind: ClassVar[str] = ""
    name: str
    factory: str
    description: str = ""
    install: str | None = None
    """pip requirement that provides the runtime extras this component needs, if any."""
    options: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """Free-form, JSON-serialisable metadata shown by ``autorl list`` (level, protocol...)."""

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name != self.name.strip():
            raise ValueError(
                f"{type(self).__name__}: invalid name {self.name!r} (non-empty, no '/', no spaces "
                "around it: '/' is reserved for 'provider/name')"
            )
        if ":" not in self.factory:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: factory must look like "
                f"'package.module:Name', got {self.factory!r}"
            )


@dataclass(frozen=True)
class TaskSpec(Spec):
    kind: ClassVar[str] = "task"
    evaluator: str | None = None
    """The evaluator that scores this task (a registry name); its spec names the contract."""
    contract: str | None = None
    """The task's implementation of that evaluator's contract, ``"pkg.module"`` or
    ``"pkg.module:object"`` (imported only by :func:`autorl.contracts.load_contract`); a run's
    options may choose another (``PreparedTask.contract``)."""
    recipe: str | None = None
    """The task's reference recipe, ``"package:directory"``: a directory of the task's package
    holding ``recipe.py`` and its modules. The ``scripted`` agent copies it into ``code/`` and
    runs it; it runs inside the sandbox with the agent runtime, so it imports no autorl code."""


@dataclass(frozen=True)
class AgentSpec(Spec):
    kind: ClassVar[str] = "agent"
    trajectory: str | None = None
    """The trajectory file this agent's adapter writes, relative to the run directory
    (``agent_trajectory.jsonl``, ``home/react-trajectory.jsonl``); None when it keeps none.
    The analysis reads a trajectory only where the run's agent declares it, so a file an agent
    plants under another agent's name is never read."""


@dataclass(frozen=True)
class EvaluatorSpec(Spec):
    kind: ClassVar[str] = "evaluator"
    contract: ContractKind | None = None
    """The contract it needs from a task, declared by the evaluator's distribution."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.contract is not None and not isinstance(self.contract, ContractKind):
            raise ValueError(
                f"EvaluatorSpec {self.name!r}: contract must be an autorl.contracts.ContractKind "
                f"(the contract's name, Protocol and row fields), got {self.contract!r}"
            )


@dataclass(frozen=True)
class ReportSpec(Spec):
    kind: ClassVar[str] = "report"


@dataclass(frozen=True)
class DriverSpec(Spec):
    """A driver backend; ``name`` is the backend prefix of ``<backend>/<model>`` names."""

    kind: ClassVar[str] = "driver"


@dataclass(frozen=True)
class ModelSpec(Spec):
    kind: ClassVar[str] = "model"


@dataclass(frozen=True)
class SandboxSpec(Spec):
    kind: ClassVar[str] = "sandbox"


@dataclass(frozen=True)
class ExecutorSpec(Spec):
    kind: ClassVar[str] = "executor"


@dataclass(frozen=True)
class CommandSpec(Spec):
    """A CLI subcommand; ``factory`` points at a ``click.Command``."""

    kind: ClassVar[str] = "command"


@dataclass(frozen=True)
class SearchBackendSpec(Spec):
    """A search backend (BM25 over a corpus, a web search API) for search-using tasks."""

    kind: ClassVar[str] = "search_backend"


@dataclass(frozen=True)
class GatewaySpec(Spec):
    """The LLM gateway: drivers opened by name and served to agents (``autorl-llm``)."""

    kind: ClassVar[str] = "gateway"


@dataclass(frozen=True)
class GraderSpec(Spec):
    """Checkpoint intake and the grading API agents submit through (``autorl-grading``)."""

    kind: ClassVar[str] = "grader"


@dataclass(frozen=True)
class RuntimeSpec(Spec):
    """The agent's Python environment: the training stack, nothing of the harness."""

    kind: ClassVar[str] = "runtime"


@dataclass(frozen=True)
class EgressSpec(Spec):
    """The agent's way out under an egress policy (the name is the policy's)."""

    kind: ClassVar[str] = "egress"


SPEC_TYPES: dict[str, type[Spec]] = {name: globals()[k.spec] for name, k in KIND_TABLE.items()}
"""Kind -> spec class, from :mod:`autorl.kinds` (each class's ``kind`` must match its row)."""
assert all(t.kind == name for name, t in SPEC_TYPES.items()), "autorl.kinds and specs disagree"
