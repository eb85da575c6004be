"""The contract mechanism with a contract of the test's own, as a third-party evaluator would
declare it: the core knows no contract by name."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Protocol

import pytest

from autorl.contracts import ContractKind, check_rows, load_contract
from autorl.errors import ConfigError
from autorl.specs import EvaluatorSpec


class ChoiceContract(Protocol):
    def build_messages(self, question: str) -> list[dict[str, str]]: ...
    def extract_choice(self, text: str) -> int | None: ...


CHOICE = ContractKind(
    "choice", ChoiceContract, optional=("FEW_SHOT",), row_fields=("question", "answer")
)


def test_the_protocol_s_methods_are_the_required_members_in_order() -> None:
    assert CHOICE.required == ("build_messages", "extract_choice")
    assert CHOICE.describe()["contract_protocol"] == f"{__name__}.ChoiceContract"
    assert EvaluatorSpec(name="choice", factory="m:C", contract=CHOICE).contract is CHOICE
    with pytest.raises(ValueError, match=r"must be an autorl\.contracts\.ContractKind"):
        EvaluatorSpec(name="choice", factory="m:C", contract="choice")  # type: ignore[arg-type]


def test_a_task_s_implementation_is_loaded_or_refused_with_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = types.ModuleType("choice_impl")
    module.build_messages = lambda question: [{"role": "user", "content": question}]
    monkeypatch.setitem(sys.modules, "choice_impl", module)
    with pytest.raises(ConfigError) as err:
        load_contract(CHOICE, "choice_impl", who="task 't'")
    assert err.value.message == "task 't''s 'choice' contract 'choice_impl' lacks extract_choice"
    assert "ChoiceContract" in err.value.hint and "FEW_SHOT" in err.value.hint
    module.extract_choice = lambda text: 0
    assert load_contract(CHOICE, "choice_impl") is module
    with pytest.raises(ConfigError, match="names no implementation of the 'choice' contract"):
        load_contract(CHOICE, None)
    with pytest.raises(ConfigError, match="cannot be imported"):
        load_contract(CHOICE, "choice_impl:missing")


def test_eval_rows_are_checked_for_the_contract_s_fields(tmp_path: Path) -> None:
    path = tmp_path / "eval.jsonl"
    path.write_text(json.dumps({"question": "q", "answer": 1}) + '\n[]\n{"question": "q"}\n')
    assert check_rows(CHOICE, path) == [
        "eval.jsonl:2: not a JSON object",
        "eval.jsonl:3: the 'choice' contract needs question, answer; missing answer",
    ]
