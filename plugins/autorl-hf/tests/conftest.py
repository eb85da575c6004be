"""Fixtures: the real tiny model (shipped by autorl-model-tiny), materialised once per session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from autorl_model_tiny.model import TinyModel

    return TinyModel().materialize(tmp_path_factory.mktemp("models")).path


@pytest.fixture(scope="session")
def tiny(tiny_dir: Path) -> tuple[Any, Any]:
    from autorl_hf.loading import load_model

    return load_model(tiny_dir, device="cpu")
