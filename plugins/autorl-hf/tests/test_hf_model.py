"""The ``hf`` model: ``--model /path/to/dir`` and ``--model hf:org/name`` reach it through the
registry (the engine's resolve_model), and a wrong directory fails before a run starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_hf.model import HFDirectoryModel
from autorl_model_tiny.model import WEIGHTS_DIR
from autorl_runner.setup import resolve_model
from autorl_testing.conformance import ModelConformance
from autorl_testing.helpers import registry_with

from autorl.errors import ConfigError


class TestHFModelConformance(ModelConformance):
    plugin_module = "autorl_hf.plugin"
    component = "hf"
    component_options = {"source": str(WEIGHTS_DIR)}  # a real HF directory, shipped
    materialize = True


def test_a_directory_or_a_hub_id_is_the_hf_models_source(tmp_path: Path) -> None:
    registry = registry_with("autorl_hf.plugin")
    local = resolve_model(registry, str(WEIGHTS_DIR))
    assert isinstance(local, HFDirectoryModel)
    info = local.materialize(tmp_path)
    assert info.path == WEIGHTS_DIR and info.name == WEIGHTS_DIR.name
    hub = resolve_model(registry, "hf:org/name")  # nothing is downloaded before materialize
    assert isinstance(hub, HFDirectoryModel) and hub.source == "hf:org/name"


def test_a_directory_without_config_json_fails_at_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a Hugging Face model directory"):
        resolve_model(registry_with("autorl_hf.plugin"), str(tmp_path))


def test_a_hub_id_that_cannot_be_fetched_is_a_config_error(tmp_path: Path) -> None:
    model = resolve_model(registry_with("autorl_hf.plugin"), "hf:not a repo id//x")
    with pytest.raises(ConfigError, match="cannot download model") as info:
        model.materialize(tmp_path)  # an invalid id: refused by huggingface_hub, no network
    assert "pass the local directory" in str(info.value.hint)


def test_without_autorl_hf_a_path_names_the_distribution(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model 'hf'") as info:
        resolve_model(registry_with("autorl.builtins"), str(tmp_path))
    assert "pip install autorl-hf" in str(info.value.hint)
