"""Shared fixtures: the task prepared once per session on a temporary cache."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from autorl_task_alfworld.task import AlfWorldTask

from autorl.types import PreparedTask, TaskContext

sys.path.insert(0, str(Path(__file__).parent))  # react_examples


def prepare(cache: Path, **options: object) -> PreparedTask:
    return AlfWorldTask().prepare(TaskContext(cache_dir=cache, options=options))


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> PreparedTask:
    return prepare(tmp_path_factory.mktemp("alfworld-cache"))
