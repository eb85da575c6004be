from __future__ import annotations

import importlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from autorl_agent_scripted.agent import COMMON, recipe_dir

RECIPE_MODULES = (
    "recipe",
    "recipe_common",
    "rounds",
    "training",
    "interactive",
    "explorer",
    "engine_rollouts",
)
"""What the recipes import from code/ (dropped between tests: each test gets fresh copies)."""


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped tiny chat model (autorl-model-tiny), materialised once per session."""
    import autorl_model_tiny.model as tiny

    return tiny.TinyModel().materialize(tmp_path_factory.mktemp("models")).path


def importable(monkeypatch: pytest.MonkeyPatch, *paths: Path) -> None:
    """Put ``paths`` first on ``sys.path`` and drop earlier tests' recipe modules."""
    for path in paths:
        monkeypatch.syspath_prepend(str(path))
    for name in (*RECIPE_MODULES, "autorl_kit"):
        sys.modules.pop(name, None)


@pytest.fixture
def common_helpers(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The common helpers (``recipe_common``, ``rounds``, ``training``, ``interactive``)
    importable, as in ``code/``; returns their directory."""
    importable(monkeypatch, COMMON)
    return COMMON


def make_workspace(
    task: object,
    options: dict[str, object],
    recipe: str,
    tmp_path: Path,
    model_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """A workspace as the harness builds it (data, kit, models/base) for a prepared ``task``,
    with the common helpers and the ``recipe`` task's recipe modules importable (fresh: earlier
    tests' copies are dropped)."""
    from autorl.types import TaskContext

    prepared = task.prepare(TaskContext(cache_dir=tmp_path / "cache", options=options))
    ws = tmp_path / "workspace"
    for sub in ("code", "data", "output", "models"):
        (ws / sub).mkdir(parents=True)
    shutil.copyfile(prepared.train_files[0], ws / "data" / "train.jsonl")
    shutil.copytree(prepared.kit_dir, ws / "kit")
    (ws / "models" / "base").symlink_to(model_dir, target_is_directory=True)
    monkeypatch.setenv("AUTORL_WORKSPACE", str(ws))
    importable(monkeypatch, ws / "kit", COMMON, Path(str(recipe_dir(recipe))))
    return ws


def workspace_fixture(task: str, doc: str, **options: object) -> Any:
    """A fixture building the workspace of ``task`` (``module:Class``) with ``options`` and the
    recipe of the task's own name (:func:`make_workspace`); ``doc`` says what the test gets."""
    module, _, name = task.partition(":")

    def workspace(tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        built = getattr(importlib.import_module(module), name)()
        return make_workspace(built, options, built.name, tmp_path, tiny_model_dir, monkeypatch)

    workspace.__doc__ = doc
    return pytest.fixture(workspace)


gsm8k_workspace = workspace_fixture(
    "autorl_task_gsm8k.task:GSM8KTask",
    "A GSM8K workspace (train split, kit, models/base), the gsm8k recipe importable.",
    train_size=40,
    eval_size=8,
)
humaneval_workspace = workspace_fixture(
    "autorl_task_humaneval.task:HumanEvalTask",
    "A HumanEval workspace (the 82 train problems, kit, models/base), its recipe importable.",
)
humaneval_reference_workspace = workspace_fixture(
    "autorl_task_humaneval.task:HumanEvalTask",
    'A HumanEval workspace with the reference prompt (``prompt = "reference"``).',
    prompt="reference",
)
webshop_workspace = workspace_fixture(
    "autorl_task_webshop.task:WebShopTask",
    "A WebShop workspace (train goals, kit, models/base), the interactive recipe importable.",
    train_size=24,
    eval_size=4,
)
alfworld_workspace = workspace_fixture(
    "autorl_task_alfworld.task:AlfWorldTask",
    "An ALFWorld workspace (every shipped train game, kit, models/base), its recipe importable.",
    eval_size=2,
)


@pytest.fixture
def smollm2_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A WebShop workspace over SmolLM2 (a model the vLLM CPU engine can run)."""
    from autorl_model_smollm2.model import SmolLM2Model
    from autorl_task_webshop.task import WebShopTask

    from autorl.paths import cache_dir

    model_dir = SmolLM2Model().materialize(cache_dir("models")).path
    options = {"train_size": 24, "eval_size": 4}
    return make_workspace(WebShopTask(), options, "webshop", tmp_path, model_dir, monkeypatch)


@pytest.fixture
def alfworld_reference_workspace(
    tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """An ALFWorld workspace graded with the reference's raw-text prompt; its examples file is
    synthetic (the real one is the user's download), with the real file's keys."""
    import autorl_task_alfworld.task as task
    from autorl_task_alfworld.prompt import required_examples

    examples = tmp_path / "alfworld_3prompts.json"
    examples.write_text(
        json.dumps({key: f"An example ({key}).\n> look\nNothing.\n" for key in required_examples()})
    )
    options = {
        "eval_size": 2,
        "train_size": 6,
        "prompt": "reference",
        "react_prompts": str(examples),
    }
    return make_workspace(
        task.AlfWorldTask(), options, "alfworld", tmp_path, tiny_model_dir, monkeypatch
    )
