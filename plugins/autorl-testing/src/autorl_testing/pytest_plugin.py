"""pytest plugin of autorl_testing: register plugins in-process on a fresh registry.

Loaded by pytest through the ``pytest11`` entry point of the ``autorl-testing`` distribution, so
it must stay light: the registry is imported inside the fixtures.

    def test_my_task(register_plugin):
        registry = register_plugin("autorl_task_mine.plugin")
        task = registry.create("task", "mine")
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from autorl_testing.runs import SHARED_CACHE_ENV

pytest_plugins = ["autorl_testing.cputime"]  # `--cpu-times FILE`: CPU seconds per test


def pytest_configure(config: pytest.Config) -> None:
    """The session's shared cache (:func:`autorl_testing.runs.run_cache`): made once by the
    process that starts the session, before xdist starts its workers, which inherit the
    variable; a pytest started inside a test (one already set) uses its parent's."""
    if os.environ.get(SHARED_CACHE_ENV) or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    path = tempfile.mkdtemp(prefix="autorl-test-cache-")
    os.chmod(path, 0o755)  # as a cache directory: sandboxes read the runtime through it
    os.environ[SHARED_CACHE_ENV] = path
    config.stash[_SHARED] = path


def pytest_unconfigure(config: pytest.Config) -> None:
    path = config.stash.get(_SHARED, None)
    if path:
        shutil.rmtree(path, ignore_errors=True)
        os.environ.pop(SHARED_CACHE_ENV, None)


_SHARED = pytest.StashKey[str]()


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
