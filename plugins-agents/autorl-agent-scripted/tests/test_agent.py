"""The scripted agent's launch: the task's recipe (found through its spec) and the common
helpers in code/, argv, option flags, tasks without a recipe."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from autorl_agent_scripted.agent import (
    COMMON,
    ScriptedAgent,
    available_recipes,
    copy_recipe,
    option_flags,
    recipe_dir,
)
from autorl_testing import agent_context, conformance

from autorl import hookimpl
from autorl.errors import ConfigError
from autorl.specs import TaskSpec
from autorl.types import AgentContext


def context(tmp_path: Path, task: str = "gsm8k", **options: object) -> AgentContext:
    return agent_context(tmp_path, task=task, options=options)


class TestScriptedConformance(conformance.AgentConformance):
    plugin_module = "autorl_agent_scripted.plugin"

    def agent_context(self, tmp_path: Path) -> AgentContext:
        return context(tmp_path)


def test_launch_copies_the_tasks_recipe_and_runs_it(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    launch = ScriptedAgent().launch(ctx)
    assert launch.argv == (sys.executable, "code/recipe.py")
    assert launch.env == {}
    code = ctx.workspace / "code"
    helpers = {
        "recipe_common.py",
        "rounds.py",
        "training.py",
        "interactive.py",
        "rollouts.py",
        "deepspeed_sft.py",
        "deepspeed_grpo.py",
        "engine_rollouts.py",
    }
    assert {p.name for p in code.iterdir()} == {"recipe.py", *helpers}
    source = recipe_dir("gsm8k") / "recipe.py"
    assert (code / "recipe.py").read_bytes() == source.read_bytes()
    assert (code / "rounds.py").read_bytes() == (COMMON / "rounds.py").read_bytes()


def test_the_recipe_comes_from_the_tasks_package() -> None:
    import autorl_task_gsm8k

    assert recipe_dir("gsm8k") == Path(autorl_task_gsm8k.__file__).parent / "recipe"
    import autorl_task_alfworld as alfworld

    assert (Path(alfworld.__file__).parent / "recipe" / "explorer.py").is_file()


def test_options_become_recipe_flags(tmp_path: Path) -> None:
    launch = ScriptedAgent().launch(context(tmp_path, mode="full", rounds=1, no_grpo=True))
    assert launch.argv[2:] == ("--mode", "full", "--rounds", "1", "--no-grpo")
    assert option_flags({"grpo_steps": 4, "skip": False}) == ["--grpo-steps", "4"]


def test_recipe_accepts_every_documented_flag(gsm8k_workspace: Path) -> None:
    import recipe

    args = recipe.parse_args(
        option_flags({"mode": "full", "rounds": 3, "no_grpo": True, "grpo_steps": 2})
    )
    assert (args.mode, args.rounds, args.no_grpo, args.grpo_steps) == ("full", 3, True, 2)


@pytest.mark.parametrize(
    ("options", "message"),
    [({"Bad Flag": 1}, "not a valid recipe flag"), ({"mode": ["a"]}, "string, number")],
)
def test_bad_options_are_precise_errors(tmp_path: Path, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ScriptedAgent().launch(context(tmp_path, **options))


def test_unknown_task_lists_the_recipes(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no recipe for task 'chess'") as info:
        ScriptedAgent().launch(context(tmp_path, task="chess"))
    assert "gsm8k" in str(info.value) and "recipe=" in str(info.value)
    with pytest.raises(ConfigError):
        ScriptedAgent().launch(context(tmp_path, task="common"))
    assert {"gsm8k", "humaneval", "webshop"} <= set(available_recipes())


def task_plugin(**specs: str | None) -> ModuleType:
    """A plugin module with one task per keyword: its name and its ``recipe`` field."""

    @hookimpl
    def autorl_register_tasks() -> list[TaskSpec]:
        return [
            TaskSpec(name=name, factory="autorl_task_gsm8k.task:GSM8KTask", recipe=recipe)
            for name, recipe in specs.items()
        ]

    module = ModuleType("autorl_task_test_plugin")
    module.autorl_register_tasks = autorl_register_tasks  # type: ignore[attr-defined]
    return module


def test_a_task_without_a_recipe_says_how_to_add_one(tmp_path: Path, autorl_registry) -> None:
    autorl_registry.register(
        task_plugin(
            plain=None,
            loose="autorl_task_gsm8k",
            gone="autorl_task_nowhere:recipe",
            empty="autorl_task_gsm8k:data_does_not_exist",
            good="autorl_task_gsm8k:recipe",
        ),
        "autorl-task-test",
    )
    assert available_recipes() == ["empty", "gone", "good", "loose"]
    for task, reason in [
        ("plain", "its TaskSpec names no recipe"),
        ("loose", "is not 'package:directory'"),
        ("gone", "cannot import 'autorl_task_nowhere'"),
        ("empty", "recipe.py not found"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(reason)) as info:
            ScriptedAgent().launch(context(tmp_path, task=task))
        assert f"no recipe for task {task!r}" in str(info.value)
        assert 'recipe="autorl_task_gsm8k:recipe"' in str(info.value)  # how to add one
    assert ScriptedAgent().launch(context(tmp_path, task="good")).argv[1] == "code/recipe.py"


def test_a_recipe_module_may_not_replace_a_helper(
    tmp_path: Path, autorl_registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "pkg" / "autorl_task_shadow"
    (package / "recipe").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "recipe" / "recipe.py").write_text("import training\n")
    (package / "recipe" / "training.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    monkeypatch.delitem(sys.modules, "autorl_task_shadow", raising=False)
    autorl_registry.register(task_plugin(shadow="autorl_task_shadow:recipe"), "autorl-task-x")
    with pytest.raises(ConfigError, match=re.escape("'training.py', the name of a helper")):
        copy_recipe("shadow", tmp_path / "code")


def test_helpers_ship_in_the_installed_package() -> None:
    import autorl_agent_scripted

    root = Path(autorl_agent_scripted.__file__).parent / "recipes" / "common"
    assert root == COMMON
    for name in ("recipe_common.py", "rounds.py", "training.py", "interactive.py"):
        assert (root / name).is_file()
