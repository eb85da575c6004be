"""Shared fixtures: the shipped questions, and a prepared task on a per-session cache."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from autorl_task_deepsearchqa.corpus import Question, load_questions
from autorl_task_deepsearchqa.task import DATA_DIR, DeepSearchQATask

from autorl.types import PreparedTask, TaskContext


@pytest.fixture(scope="session")
def train_questions() -> list[Question]:
    return load_questions(DATA_DIR / "questions_train.json")


@pytest.fixture(scope="session")
def eval_questions() -> list[Question]:
    return load_questions(DATA_DIR / "questions_eval.json")


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> PreparedTask:
    cache = tmp_path_factory.mktemp("dsqa-cache")
    return DeepSearchQATask().prepare(TaskContext(cache_dir=cache, options={}))


def _prepare(cache: Path, **options: object) -> PreparedTask:
    return DeepSearchQATask().prepare(TaskContext(cache_dir=cache, options=options))


@pytest.fixture
def prepare() -> Callable[..., PreparedTask]:
    """``prepare(cache_dir, **task_options)``."""
    return _prepare
