"""Shared fixtures: the tiny model, a small eval split, a live fake provider."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # plain_protocol

from autorl_evaluator_judge.contract import JUDGE
from autorl_llm.testing import FakeProvider

from autorl.contracts import load_contract
from autorl.types import EvalRequest

KEY = "sk-test-judge"
EXAMPLES = [
    ("Name a primary colour.", "Red is a primary colour."),
    ("What is the capital of Chile?", "The capital of Chile is Santiago."),
    ("Give a synonym of 'happy'.", "A synonym of 'happy' is 'joyful'."),
    ("List two fruits.", "- Apple\n- Banana"),
    (
        "Explain what a noun is in one sentence.",
        "A noun is a word that names a person, place, thing or idea.",
    ),
    ("Rewrite in the past tense: I run fast.", "I ran fast."),
    ("How many legs does a spider have?", "A spider has eight legs."),
    ("Is a whale a fish or a mammal?", "A whale is a mammal."),
]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped tiny chat model (autorl-model-tiny), materialised once per session."""
    import autorl_model_tiny.model as tiny

    return tiny.TinyModel().materialize(tmp_path_factory.mktemp("models")).path


def write_eval(path: Path, examples: list[tuple[str, str]] = EXAMPLES) -> Path:
    path.write_text(
        "".join(
            json.dumps({"id": f"e{i}", "instruction": q, "reference": a}) + "\n"
            for i, (q, a) in enumerate(examples)
        ),
        encoding="utf-8",
    )
    return path


def request(
    model: Path, eval_path: Path, work: Path, config: dict, progress: Any = None
) -> EvalRequest:
    """An evaluation of ``model`` on ``eval_path`` under the judge's plain test protocol."""
    return EvalRequest(
        model_dir=model,
        eval_path=eval_path,
        config=config,
        work_dir=work,
        progress=progress,
        contract=load_contract(JUDGE, "plain_protocol"),
    )


@pytest.fixture
def eval_path(tmp_path: Path) -> Path:
    return write_eval(tmp_path / "eval.jsonl")


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(api_key=KEY) as provider:
        yield provider
