"""Fixtures of the grading tests: a live grading server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from autorl_testing.grading import LiveGrader


@pytest.fixture
def grader(tmp_path: Path) -> Iterator[LiveGrader]:
    g = LiveGrader(tmp_path)
    yield g
    g.close()
