from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from autorl_llm.gateway import Gateway

from .helpers import TOKEN, scripted


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    with Gateway(scripted(), token=TOKEN, log_path=tmp_path / "driver_calls.jsonl") as gw:
        yield gw
