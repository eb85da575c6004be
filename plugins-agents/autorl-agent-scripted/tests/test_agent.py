"""The scripted agent's launch: recipe files in code/, argv, option flags, unknown tasks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from autorl_agent_scripted.agent import RECIPES, ScriptedAgent, available_recipes, option_flags

from autorl.errors import ConfigError
from autorl.testing import conformance
from autorl.types import AgentContext


def context(tmp_path: Path, task: str = "gsm8k", **options: object) -> AgentContext:
    workspace = tmp_path / "workspace"
    (workspace / "code").mkdir(parents=True, exist_ok=True)
    return AgentContext(
        workspace=workspace,
        home=tmp_path / "home",
        task=task,
        description="d",
        instructions="i",
        grader_url="http://127.0.0.1:9",
        token="t",
        budget_seconds=60.0,
        max_submissions=3,
        python=sys.executable,
        options=options,
    )


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
    assert {"recipe.py", "recipe_common.py", "training.py"} <= {p.name for p in code.iterdir()}
    source = RECIPES / "gsm8k" / "recipe.py"
    assert (code / "recipe.py").read_bytes() == source.read_bytes()


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
    assert "gsm8k" in str(info.value)
    with pytest.raises(ConfigError):
        ScriptedAgent().launch(context(tmp_path, task="common"))
    assert {"gsm8k", "humaneval", "webshop"} <= set(available_recipes())


def test_recipes_ship_in_the_installed_package() -> None:
    import autorl_agent_scripted

    root = Path(autorl_agent_scripted.__file__).parent / "recipes"
    assert (root / "gsm8k" / "recipe.py").is_file()
    assert (root / "common" / "recipe_common.py").is_file()
