"""Errors that guide without misleading: no 'pip install' of a typo, no reinstall advice for an
entry point whose own pyproject names a module that does not exist."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest
from autorl_testing.helpers import registry_with

from autorl.errors import RegistryError
from autorl.plugins import ENTRY_POINT_GROUP, _load_entry_point, new_plugin_manager


def test_a_typo_is_answered_with_the_installed_name_not_a_package() -> None:
    registry = registry_with("autorl.builtins")
    with pytest.raises(RegistryError) as info:
        registry.get("executor", "locl")
    assert "did you mean: local" in info.value.message
    assert info.value.hint is not None and "pip install" not in info.value.hint
    assert "'local'" in info.value.hint


def test_a_name_autorl_does_not_ship_is_never_made_into_a_package_name() -> None:
    """``autorl-sandbox-firecracker`` may not exist, or be anyone's: only the plugin's author
    knows its distribution (autorl's own names: tests/test_install_hints.py)."""
    registry = registry_with("autorl.builtins")
    with pytest.raises(RegistryError) as info:
        registry.get("sandbox", "firecracker")
    assert "pip install" not in str(info.value.hint)
    assert "autorl ships no sandbox 'firecracker'" in str(info.value.hint)


def test_an_entry_point_naming_a_missing_module_says_which_line_to_fix() -> None:
    ep = EntryPoint("autorl-task-x", "autorl_task_x_typo.plugin", ENTRY_POINT_GROUP)
    info = _load_entry_point(new_plugin_manager(), ep)
    assert info.status == "failed"
    assert "pyproject.toml" in str(info.error) and "[project.entry-points" in str(info.error)
    assert "autorl-task-x = 'autorl_task_x_typo.plugin'" in str(info.error)
