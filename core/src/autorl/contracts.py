"""What an evaluator needs from a task: typed contracts the registry knows.

An evaluator declares the contract it consumes (``EvaluatorSpec(contract="answer")``); a task
publishes an implementation of it (``TaskSpec(evaluator="exact", contract="pkg.module")``, and
per run ``PreparedTask.contract`` when its options pick another one). The engine loads it with
:func:`load_contract` (the one place that imports a task's contract), checks it against the
contract's :class:`Protocol`, and hands the object to the evaluator in ``EvalRequest.contract``.
``autorl show task NAME`` prints it; ``TaskConformance`` checks a task against the evaluator it
names. An implementation is any object with the members, usually a module of functions.

The contracts are the functions each shipped evaluator calls; their rows are what it reads from
the eval split (``eval.jsonl``, one JSON object per line).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from autorl.errors import ConfigError

Messages = list[dict[str, str]]


class AnswerContract(Protocol):
    """``answer``: one question, one final answer, exact match (evaluator ``exact``).
    Rows: ``question`` and ``answer`` (strings)."""

    def build_messages(self, question: str) -> Messages: ...
    def extract_answer(self, text: str) -> str | None: ...
    def normalize(self, answer: str) -> str | None: ...


class CodeContract(Protocol):
    """``code``: a function to complete, run against tests (evaluator ``code``).
    Rows: ``task_id``, ``prompt``, ``test``, ``entry_point``."""

    def build_prompt(self, problem: Mapping[str, Any]) -> str | Messages: ...
    def extract_code(self, completion: str, problem: Mapping[str, Any]) -> str: ...


class JudgeContract(Protocol):
    """``judge``: an instruction answered, compared by a judge with a reference (evaluator
    ``judge``). Rows: ``instruction`` and ``reference``."""

    def build_messages(self, instruction: str) -> Messages: ...


class InteractiveContract(Protocol):
    """``interactive``: episodes in an environment (evaluator ``rollout``). Rows: one session
    per line, read by ``load_sessions``. ``build_messages`` returns chat messages or raw text
    (a ``str``, sent without a chat template); one with an ``info`` parameter also gets the
    episode's reset info. Optional: ``episode_metrics(info)``, ``ENV_OPTIONS`` (the
    evaluator-config keys forwarded to ``make_env``), ``STOP`` (reply stop strings)."""

    def load_sessions(self, eval_path: Path) -> list[str]: ...
    def make_env(self, config: Mapping[str, Any], eval_path: Path) -> Any: ...
    def build_messages(
        self, observations: Sequence[str], actions: Sequence[str], history_window: int
    ) -> Messages | str: ...
    def extract_action(self, reply: str) -> str | None: ...


@dataclass(frozen=True)
class ContractKind:
    name: str
    protocol: type
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    row_fields: tuple[str, ...] = ()
    """Fields every eval row must hold (empty: the contract reads its rows itself)."""
    summary: str = ""


CONTRACTS: dict[str, ContractKind] = {
    kind.name: kind
    for kind in (
        ContractKind(
            "answer",
            AnswerContract,
            ("build_messages", "extract_answer", "normalize"),
            ("has_final_answer_line",),
            ("question", "answer"),
            "one question, one final answer, exact match",
        ),
        ContractKind(
            "code",
            CodeContract,
            ("build_prompt", "extract_code"),
            ("STOP_SEQUENCES",),
            ("task_id", "prompt", "test", "entry_point"),
            "a function to complete, run against its tests",
        ),
        ContractKind(
            "judge",
            JudgeContract,
            ("build_messages",),
            (),
            ("instruction", "reference"),
            "an instruction answered, judged against a reference",
        ),
        ContractKind(
            "interactive",
            InteractiveContract,
            ("load_sessions", "make_env", "build_messages", "extract_action"),
            ("episode_metrics", "ENV_OPTIONS", "STOP"),
            summary="episodes in an environment, one action per turn",
        ),
    )
}


def contract_kind(name: str) -> ContractKind:
    try:
        return CONTRACTS[name]
    except KeyError:
        raise ConfigError(
            f"unknown contract {name!r}",
            hint=f"contracts: {', '.join(CONTRACTS)} (autorl/contracts.py)",
        ) from None


def import_ref(ref: str) -> Any:
    """``"pkg.module"`` (the module) or ``"pkg.module:attr"``."""
    module_name, _, attr = ref.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def load_contract(kind: str, ref: str | None, *, who: str = "the task") -> Any:
    """Import ``ref`` and check it provides every member of contract ``kind``."""
    spec = contract_kind(kind)
    if not ref:
        raise ConfigError(
            f"{who} names no implementation of the {kind!r} contract its evaluator needs",
            hint=f"set TaskSpec(contract='pkg.module') or PreparedTask(contract=...); "
            f"it provides {', '.join(spec.required)}",
        )
    try:
        found = import_ref(ref)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"{who}'s {kind!r} contract {ref!r} cannot be imported: {exc}",
            hint="fix the reference ('package.module' or 'package.module:object') or install "
            "the package that provides it",
        ) from None
    missing = [m for m in spec.required if not callable(getattr(found, m, None))]
    if missing:
        raise ConfigError(
            f"{who}'s {kind!r} contract {ref!r} lacks {', '.join(missing)}",
            hint=f"the {kind!r} contract: {', '.join(spec.required)} "
            f"(optional: {', '.join(spec.optional) or 'none'}); see docs/evaluators/",
        )
    return found


def check_rows(kind: str, eval_path: Path, limit: int = 20) -> list[str]:
    """Problems with the first ``limit`` rows of an eval split for contract ``kind``."""
    spec = contract_kind(kind)
    if not spec.row_fields:
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
            missing = [f for f in spec.row_fields if f not in row]
            if missing:
                problems.append(
                    f"{eval_path.name}:{number}: the {kind!r} contract needs "
                    f"{', '.join(spec.row_fields)}; missing {', '.join(missing)}"
                )
    return problems


def prepared_contract(registry: Any, task: str, prepared: Any) -> tuple[str | None, Any]:
    """``(ref, implementation)`` of the contract ``prepared.evaluator`` needs, from the run's
    choice (``PreparedTask.contract``) or the task's spec; ``(None, None)`` when the evaluator
    needs none. What the engine, benches and tests call to build an ``EvalRequest``."""
    kind = registry.get("evaluator", prepared.evaluator).spec.contract
    if not kind:
        return None, None
    ref = prepared.contract or registry.get("task", task).spec.contract
    return ref, load_contract(kind, ref, who=f"task {task!r}")
