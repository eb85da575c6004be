from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # counter_protocol


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped tiny chat model (autorl-model-tiny), materialised once per session."""
    import autorl_model_tiny.model as tiny

    return tiny.TinyModel().materialize(tmp_path_factory.mktemp("models")).path
