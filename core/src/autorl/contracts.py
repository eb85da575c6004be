"""What an evaluator needs from a task, and the check where the two meet.

An evaluator declares the contract it consumes on its spec
(``EvaluatorSpec(contract=ContractKind(...))``); the contract's Protocol and its
:class:`ContractKind` live in the evaluator's distribution, so a new evaluator brings its own
without touching the core. A task publishes an implementation (``TaskSpec(evaluator="exact",
contract="pkg.module")``, and per run ``PreparedTask.contract`` when its options pick another).
The engine loads it with :func:`load_contract` (the one place that imports a task's contract),
checks it against the kind, and hands the object to the evaluator in ``EvalRequest.contract``.
``autorl show`` and ``autorl list evaluators`` print the kind; ``TaskConformance`` checks a task
against the evaluator it names. An implementation is any object with the members, usually a
module of functions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError


@dataclass(frozen=True)
class ContractKind:
    """A contract an evaluator declares: the task must provide every method of ``protocol``
    (a ``typing.Protocol`` of the evaluator's distribution); each eval row must hold
    ``row_fields`` (empty: the contract reads its rows itself)."""

    name: str
    protocol: type
    optional: tuple[str, ...] = ()
    row_fields: tuple[str, ...] = ()
    summary: str = ""

    @property
    def required(self) -> tuple[str, ...]:
        """The Protocol's methods, in the order it defines them."""
        members = vars(self.protocol).items()
        return tuple(n for n, v in members if not n.startswith("_") and callable(v))

    @property
    def where(self) -> str:
        """The Protocol's dotted path, where the contract is documented."""
        return f"{self.protocol.__module__}.{self.protocol.__qualname__}"

    def of(self, request: Any, evaluator: str) -> Any:
        """The task's contract in an ``EvalRequest``; without one, a ConfigError that says how
        to load it (the evaluators' shared check)."""
        if request.contract is None:
            const = self.name.upper()
            raise ConfigError(
                f"evaluator {evaluator!r} needs the task's {self.name!r} contract in "
                "EvalRequest.contract",
                hint="runs load it from the task (TaskSpec.contract); outside a run use "
                f"load_contract({const}, 'pkg.module') (autorl.contracts; {const}: "
                f"{self.protocol.__module__})",
            )
        return request.contract

    def describe(self) -> dict[str, str]:
        """What ``autorl show`` and ``autorl list evaluators`` print about it."""
        optional = f" (optional: {', '.join(self.optional)})" if self.optional else ""
        rows = {
            "contract_kind": f"{self.name}: {self.summary}",
            "contract_members": ", ".join(self.required) + optional,
            "contract_protocol": self.where,
        }
        if self.row_fields:
            rows["contract_rows"] = ", ".join(self.row_fields)
        return rows


def load_contract(kind: ContractKind, ref: str | None, *, who: str = "the task") -> Any:
    """Import ``ref`` and check it provides every member of contract ``kind``."""
    from autorl.registry import import_object  # the registry imports the specs, which import this

    if not ref:
        raise ConfigError(
            f"{who} names no implementation of the {kind.name!r} contract its evaluator needs",
            hint=f"set TaskSpec(contract='pkg.module') or PreparedTask(contract=...); "
            f"it provides {', '.join(kind.required)}",
        )
    try:
        found = import_object(ref)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"{who}'s {kind.name!r} contract {ref!r} cannot be imported: {exc}",
            hint="fix the reference ('package.module' or 'package.module:object') or install "
            "the package that provides it",
        ) from None
    missing = [m for m in kind.required if not callable(getattr(found, m, None))]
    if missing:
        raise ConfigError(
            f"{who}'s {kind.name!r} contract {ref!r} lacks {', '.join(missing)}",
            hint=f"the {kind.name!r} contract ({kind.where}): {', '.join(kind.required)} "
            f"(optional: {', '.join(kind.optional) or 'none'}); see docs/evaluators/",
        )
    return found


def check_rows(kind: ContractKind, eval_path: Path, limit: int = 20) -> list[str]:
    """Problems with the first ``limit`` rows of an eval split for contract ``kind``."""
    if not kind.row_fields:
        return []
    problems: list[str] = []
    with Path(eval_path).open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if number > limit:
                break
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{eval_path.name}:{number}: not JSON ({exc.msg})")
                continue
            if not isinstance(row, dict):
                problems.append(f"{eval_path.name}:{number}: not a JSON object")
                continue
            missing = [f for f in kind.row_fields if f not in row]
            if missing:
                problems.append(
                    f"{eval_path.name}:{number}: the {kind.name!r} contract needs "
                    f"{', '.join(kind.row_fields)}; missing {', '.join(missing)}"
                )
    return problems


def prepared_contract(registry: Any, task: str, prepared: Any) -> tuple[str | None, Any]:
    """``(ref, implementation)`` of the contract ``prepared.evaluator`` needs, from the run's
    choice (``PreparedTask.contract``) or the task's spec, loaded and checked once with the
    first eval rows, so a mismatch fails before the baseline; ``(None, None)`` when the
    evaluator needs none. What the engine, benches and tests call to build an ``EvalRequest``."""
    kind = registry.get("evaluator", prepared.evaluator).spec.contract
    if kind is None:
        return None, None
    ref = prepared.contract or registry.get("task", task).spec.contract
    contract = load_contract(kind, ref, who=f"task {task!r}")
    problems = check_rows(kind, Path(prepared.eval_path))
    if problems:
        raise ConfigError(
            f"task {task!r}: its eval rows do not fit evaluator {prepared.evaluator!r}: "
            + "; ".join(problems[:3]),
            hint=f"write the fields the {kind.name!r} contract reads ({kind.where})",
        )
    return ref, contract
