"""pytest plugin of autorl_testing: register plugins in-process on a fresh registry.

Loaded by pytest through the ``pytest11`` entry point of the ``autorl-testing`` distribution, so
it must stay light: the registry is imported inside the fixtures.

    def test_my_task(register_plugin):
        registry = register_plugin("autorl_task_mine.plugin")
        task = registry.create("task", "mine")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest


@pytest.fixture
def autorl_registry() -> Iterator[Any]:
    """An empty :class:`autorl.registry.Registry`, installed as the process-wide registry.

    Code under test that calls ``get_registry()`` (the CLI, the run engine) sees only what the
    test registers; the previous registry is restored afterwards.
    """
    from autorl import registry as registry_module

    previous = registry_module._default
    fresh = registry_module.Registry.empty()
    registry_module.reset_registry(fresh)
    try:
        yield fresh
    finally:
        registry_module.reset_registry(previous)


@pytest.fixture
def register_plugin(autorl_registry: Any) -> Callable[..., Any]:
    """``register_plugin(module_or_import_name, name=None, builtins=False)`` -> the registry.

    The plugin name defaults to the module's top-level package with dashes
    (``autorl_task_mine.plugin`` -> ``autorl-task-mine``), like an installed distribution.
    ``builtins=True`` also registers the core's own components (the ``local`` sandbox...).
    """
    from autorl_testing.helpers import load_module, plugin_name_of

    def register(module: ModuleType | str, name: str | None = None, builtins: bool = False) -> Any:
        loaded = load_module(module)
        if builtins and "autorl" not in {p.name for p in autorl_registry.plugins}:
            autorl_registry.register(load_module("autorl.builtins"), "autorl")
        autorl_registry.register(loaded, name or plugin_name_of(loaded))
        return autorl_registry

    return register
