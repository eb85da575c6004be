from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from autorl_agent_scripted.agent import RECIPES


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped tiny chat model (autorl-model-tiny), materialised once per session."""
    tiny = pytest.importorskip("autorl_model_tiny.model", reason="needs autorl-model-tiny")
    return tiny.TinyModel().materialize(tmp_path_factory.mktemp("models")).path


@pytest.fixture
def gsm8k_workspace(tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace as the harness builds it (data, kit, models/base), recipe modules importable."""
    task = pytest.importorskip("autorl_task_gsm8k.task", reason="needs autorl-task-gsm8k")
    from autorl.types import TaskContext

    prepared = task.GSM8KTask().prepare(
        TaskContext(cache_dir=tmp_path / "cache", options={"train_size": 40, "eval_size": 8})
    )
    ws = tmp_path / "workspace"
    for sub in ("code", "data", "output", "models"):
        (ws / sub).mkdir(parents=True)
    shutil.copyfile(prepared.train_files[0], ws / "data" / "train.jsonl")
    shutil.copytree(prepared.kit_dir, ws / "kit")
    (ws / "models" / "base").symlink_to(tiny_model_dir, target_is_directory=True)
    monkeypatch.setenv("AUTORL_WORKSPACE", str(ws))
    for path in (ws / "kit", RECIPES / "common", RECIPES / "gsm8k"):
        monkeypatch.syspath_prepend(str(path))
    for name in ("recipe", "recipe_common", "training", "interactive", "autorl_kit"):
        sys.modules.pop(name, None)
    return ws


@pytest.fixture
def webshop_workspace(
    tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A WebShop workspace (train goals, kit, models/base), the interactive recipe importable."""
    task = pytest.importorskip("autorl_task_webshop.task", reason="needs autorl-task-webshop")
    from autorl.types import TaskContext

    prepared = task.WebShopTask().prepare(
        TaskContext(cache_dir=tmp_path / "cache", options={"train_size": 24, "eval_size": 4})
    )
    ws = tmp_path / "workspace"
    for sub in ("code", "data", "output", "models"):
        (ws / sub).mkdir(parents=True)
    shutil.copyfile(prepared.train_files[0], ws / "data" / "train.jsonl")
    shutil.copytree(prepared.kit_dir, ws / "kit")
    (ws / "models" / "base").symlink_to(tiny_model_dir, target_is_directory=True)
    monkeypatch.setenv("AUTORL_WORKSPACE", str(ws))
    for path in (ws / "kit", RECIPES / "common", RECIPES / "webshop"):
        monkeypatch.syspath_prepend(str(path))
    for name in ("recipe", "recipe_common", "training", "interactive", "autorl_kit"):
        sys.modules.pop(name, None)
    return ws
