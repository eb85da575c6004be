"""The ``scripted`` agent: copies the task's reference recipe into ``code/`` and runs it.

Each task ships its own recipe: its ``TaskSpec(recipe="package:directory")`` names a directory
of the task's package holding ``recipe.py`` and its modules. The agent finds it through the
registry, copies the shared helpers (:data:`HELPERS` of ``recipes/common/``: the grader
client, the clock, ``run_rounds``, ``lora_config``, ``run_sft``...) and the recipe's ``*.py``
into ``workspace/code/`` and runs ``code/recipe.py``. The agent knows no task.
``[agent_options]`` become the recipe's command-line flags: ``{"mode": "full", "rounds": 1}``
runs ``python code/recipe.py --mode full --rounds 1``; ``true`` gives a bare flag.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Mapping
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError, RegistryError
from autorl.registry import get_registry
from autorl.types import AgentContext, AgentLaunch

COMMON = Path(__file__).resolve().parent / "recipes" / "common"
"""Where the task-independent helpers live in this package."""
HELPERS = (
    "recipe_common.py",
    "rounds.py",
    "training.py",
    "interactive.py",
    "rollouts.py",
    "deepspeed_sft.py",
    "deepspeed_grpo.py",
    "engine_rollouts.py",
)
"""The modules a task's recipe may import: the agent copies them next to ``recipe.py`` into
``code/``, where ``python code/recipe.py`` finds them first on ``sys.path``. They are the
recipes' declared dependency (a task with a recipe names ``autorl-agent-scripted`` in its
``recipe`` extra); the agent runtime has no autorl package, so they are copied, not installed."""
ENTRY = "recipe.py"
FLAG_RE = re.compile(r"^[a-z][a-z0-9_-]*$")
HOW_TO_ADD = (
    "a task adds one as a directory of its package holding recipe.py (for example "
    "{package}/recipe/) registered in its plugin.py with TaskSpec(..., "
    'recipe="{package}:recipe"); see docs/agents/scripted.md'
)


def available_recipes() -> list[str]:
    """The installed tasks whose spec names a recipe."""
    entries = get_registry().entries("task")
    return sorted({e.name for e in entries if getattr(e.spec, "recipe", None)})


def recipe_dir(task: str) -> Traversable:
    """The directory of ``task``'s recipe, from the ``recipe`` field of its spec."""

    def missing(why: str, package: str = "<package>") -> ConfigError:
        recipes = ", ".join(available_recipes()) or "(none)"
        return ConfigError(
            f"agent 'scripted' has no recipe for task {task!r}: {why}",
            hint=f"tasks with a recipe: {recipes}; " + HOW_TO_ADD.format(package=package),
        )

    try:
        spec = get_registry().get("task", task).spec
    except RegistryError as exc:
        raise missing(exc.message) from None
    own = spec.factory.split(":")[0].split(".")[0]  # the task's package, for the hint
    recipe = getattr(spec, "recipe", None)
    if not recipe:
        raise missing("its TaskSpec names no recipe", own)
    package, sep, directory = recipe.partition(":")
    parts = [p for p in directory.split("/") if p not in ("", ".")]
    if not sep or not package or not parts or ".." in parts:
        raise missing(f"recipe={recipe!r} is not 'package:directory'", own)
    try:
        found = files(package).joinpath(*parts)
    except ImportError as exc:
        raise missing(f"recipe={recipe!r}: cannot import {package!r} ({exc})", own) from None
    if not found.joinpath(ENTRY).is_file():
        raise missing(f"recipe={recipe!r}: {ENTRY} not found in {found}", own)
    return found


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
    """Copy the common helpers and the task's recipe (its ``*.py``) into ``code_dir``; returns
    the copies. A recipe module named like a common helper is an error (it would replace it)."""
    sources: dict[str, Traversable] = {name: COMMON / name for name in HELPERS}
    recipe = recipe_dir(task)
    for source in sorted(recipe.iterdir(), key=lambda t: t.name):
        if not (source.name.endswith(".py") and source.is_file()):
            continue
        if source.name in sources:
            raise ConfigError(
                f"the recipe of task {task!r} ({recipe}) has a module {source.name!r}, the name "
                "of a helper the scripted agent copies next to it",
                hint=f"rename it; the helpers are {', '.join(sorted(sources))}",
            )
        sources[source.name] = source
    code_dir.mkdir(parents=True, exist_ok=True)
    copied = []
    for name, source in sources.items():
        target = code_dir / name
        target.write_bytes(source.read_bytes())
        copied.append(target)
    return copied


def declared_flags(task: str) -> set[str]:
    """The flags the task's recipe and the common helpers declare (``add_argument("--x"...)``),
    read from their source with ``ast``: nothing is imported or run in the harness."""
    sources = [COMMON / name for name in HELPERS]
    recipe = recipe_dir(task)
    sources += [t for t in recipe.iterdir() if t.name.endswith(".py") and t.is_file()]
    flags: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"
            ):
                flags.update(
                    a.value
                    for a in node.args
                    if isinstance(a, ast.Constant)
                    and isinstance(a.value, str)
                    and a.value.startswith("--")
                )
    return flags


class ScriptedAgent:
    """No LLM: runs the reference recipe the task ships (the embedded default agent)."""

    name = "scripted"

    def check(self, task: str, options: Mapping[str, Any]) -> None:
        """Before the run: the task has a recipe, and every option is one of its flags."""
        option_flags(options)
        flags = declared_flags(task)
        for key in options:
            if "--" + str(key).replace("_", "-") not in flags:
                names = sorted(f[2:].replace("-", "_") for f in flags)
                close = difflib.get_close_matches(str(key), names, n=1)
                raise ConfigError(
                    f"agent 'scripted': the recipe of task {task!r} has no option {key!r}"
                    + (f" (did you mean {close[0]!r}?)" if close else ""),
                    hint=f"its options: {', '.join(names)} (docs/agents/scripted.md)",
                )

    def launch(self, ctx: AgentContext) -> AgentLaunch:
        flags = option_flags(ctx.options)
        copy_recipe(ctx.task, Path(ctx.workspace) / "code")
        return AgentLaunch(argv=(ctx.python, f"code/{ENTRY}", *flags), env={})
