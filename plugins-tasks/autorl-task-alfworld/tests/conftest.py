"""Shared fixtures: the task prepared once per session on a temporary cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_task_alfworld.task import AlfWorldTask

from autorl.types import PreparedTask, TaskContext


def prepare(cache: Path, **options: object) -> PreparedTask:
    return AlfWorldTask().prepare(TaskContext(cache_dir=cache, options=options))


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> PreparedTask:
    return prepare(tmp_path_factory.mktemp("alfworld-cache"))
