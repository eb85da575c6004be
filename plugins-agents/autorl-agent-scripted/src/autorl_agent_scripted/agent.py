"""The ``scripted`` agent: copies the task's reference recipe into ``code/`` and runs it.

A recipe lives in ``recipes/<task>/`` (entry script ``recipe.py``); the files of
``recipes/common/`` are copied next to it. Adding a task's recipe means adding a directory.
``[agent_options]`` become the recipe's command-line flags: ``{"mode": "full", "rounds": 1}``
runs ``python code/recipe.py --mode full --rounds 1``; ``true`` gives a bare flag.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl.types import AgentContext, AgentLaunch

RECIPES = Path(__file__).resolve().parent / "recipes"
COMMON = "common"
ENTRY = "recipe.py"
FLAG_RE = re.compile(r"^[a-z][a-z0-9_-]*$")


def available_recipes() -> list[str]:
    """Tasks that have a recipe directory with an entry script."""
    return sorted(d.name for d in RECIPES.iterdir() if d.name != COMMON and (d / ENTRY).is_file())


def recipe_dir(task: str) -> Path:
    directory = RECIPES / task
    if task == COMMON or not (directory / ENTRY).is_file():
        raise ConfigError(
            f"agent 'scripted' has no recipe for task {task!r}",
            hint=f"recipes exist for: {', '.join(available_recipes())}; add one as "
            f"autorl_agent_scripted/recipes/{task}/recipe.py, or pick another agent",
        )
    return directory


def option_flags(options: Mapping[str, Any]) -> list[str]:
    """``{"mode": "full", "no_grpo": True}`` -> ``["--mode", "full", "--no-grpo"]``."""
    flags: list[str] = []
    for key, value in options.items():
        if not FLAG_RE.match(str(key)):
            raise ConfigError(
                f"agent option {key!r}: not a valid recipe flag name",
                hint="use lower-case names such as mode, rounds, grpo_steps",
            )
        flag = "--" + str(key).replace("_", "-")
        if value is True:
            flags.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, str | int | float):
            flags += [flag, str(value)]
        else:
            raise ConfigError(
                f"agent option {key}={value!r}: must be a string, number or boolean",
                hint="recipe flags take one value each",
            )
    return flags


def copy_recipe(task: str, code_dir: Path) -> list[Path]:
    """Copy the common helpers and the task's recipe into ``code_dir``; returns the copies."""
    code_dir.mkdir(parents=True, exist_ok=True)
    copied = []
    for source_dir in (RECIPES / COMMON, recipe_dir(task)):
        for source in sorted(source_dir.glob("*.py")):
            target = code_dir / source.name
            shutil.copyfile(source, target)
            copied.append(target)
    return copied


class ScriptedAgent:
    """No LLM: runs the fixed reference recipe of the task (the embedded default agent)."""

    name = "scripted"

    def launch(self, ctx: AgentContext) -> AgentLaunch:
        flags = option_flags(ctx.options)
        copy_recipe(ctx.task, Path(ctx.workspace) / "code")
        return AgentLaunch(argv=(ctx.python, f"code/{ENTRY}", *flags), env={})
