"""A live grading server, whose log the records read back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from autorl_testing.grading import LiveGrader


@pytest.fixture
def grader(tmp_path: Path) -> Iterator[LiveGrader]:
    g = LiveGrader(tmp_path)  # the grader's root is the run directory the test completes
    yield g
    g.close()
