"""Shared fixtures: the tiny model, a small eval split, a live fake provider."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # plain_protocol

from autorl_llm.testing import FakeProvider

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


@pytest.fixture
def eval_path(tmp_path: Path) -> Path:
    return write_eval(tmp_path / "eval.jsonl")


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(api_key=KEY) as provider:
        yield provider
