"""The core never imports a plugin: every import in core/src/autorl, read with ast (so a lazy
import inside a function counts too), names the standard library, a third-party library, or
autorl itself; never a package that an installed ``autorl.plugins`` entry point belongs to."""

from __future__ import annotations

import ast
from importlib.metadata import entry_points
from pathlib import Path

import autorl

CORE = Path(autorl.__file__).parent
LIBRARIES = {"autorl_hf", "autorl_serving"}
"""Plugin-side packages core must not import either, entry point or not (a library has none)."""


def plugin_packages() -> set[str]:
    found = set()
    for ep in entry_points(group="autorl.plugins"):
        top = ep.value.partition(":")[0].split(".")[0]
        if top != "autorl":
            found.add(top)
    return found


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_core_module_imports_a_plugin() -> None:
    plugins = plugin_packages()
    assert {"autorl_llm", "autorl_sandbox_isolated", "autorl_task_gsm8k"} <= plugins, plugins
    offenders = {
        str(path.relative_to(CORE)): sorted(imported(path) & (plugins | LIBRARIES))
        for path in sorted(CORE.rglob("*.py"))
        if imported(path) & (plugins | LIBRARIES)
    }
    assert offenders == {}, offenders
