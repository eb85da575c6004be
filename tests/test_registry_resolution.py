"""The registry facade in-process: clashes, qualified names, unknown names, protocol checks."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from autorl import hookimpl
from autorl.errors import PluginError, RegistryError
from autorl.plugins import PluginInfo
from autorl.registry import Registry
from autorl.specs import ReportSpec, TaskSpec
from autorl.types import PreparedTask, TaskContext


class RealTask:
    """A task that satisfies the protocol (used by the clash plugin)."""

    name = "twin"
    version = "1"

    def prepare(self, ctx: TaskContext) -> PreparedTask:
        raise NotImplementedError


class NotAReport:
    """Has a name but no ``render``: the registry must refuse it."""

    name = "hollow"


class ClashPlugin:
    """A second provider of a task called ``fixture-add``, and of ``twin``."""

    @hookimpl
    def autorl_register_tasks(self) -> list[TaskSpec]:
        return [
            TaskSpec(name="fixture-add", factory=f"{__name__}:RealTask", description="clash"),
            TaskSpec(name="twin", factory=f"{__name__}:RealTask", description="unique"),
        ]


class HollowPlugin:
    @hookimpl
    def autorl_register_reports(self) -> list[ReportSpec]:
        return [
            ReportSpec(name="hollow", factory=f"{__name__}:NotAReport", description="bad"),
            ReportSpec(name="ghost", factory="no_such_module_xyz:Nothing", description="gone"),
        ]


class RaisingPlugin:
    @hookimpl
    def autorl_register_tasks(self) -> list[TaskSpec]:
        raise ValueError("cannot list tasks today")


class WrongSpecPlugin:
    @hookimpl
    def autorl_register_tasks(self) -> list[Any]:
        return [ReportSpec(name="oops", factory="x:y", description="a report, not a task")]


@pytest.fixture
def registry(register_plugin) -> Registry:
    return register_plugin("autorl_fixture_plugin.plugin", builtins=True)


def test_register_plugin_fixture_names_plugins_like_distributions(registry: Registry) -> None:
    assert [p.name for p in registry.plugins] == ["autorl", "autorl-fixture-plugin"]
    assert registry.get("task", "fixture-add").provider == "autorl-fixture-plugin"


def test_fixture_registry_is_the_process_registry(registry: Registry) -> None:
    from autorl.registry import get_registry

    assert get_registry() is registry


def test_clash_is_an_error_naming_both_providers(registry: Registry) -> None:
    registry.register(ClashPlugin(), "autorl-task-clash")
    with pytest.raises(RegistryError) as err:
        registry.get("task", "fixture-add")
    text = str(err.value)
    assert "ambiguous" in text
    assert "autorl-fixture-plugin and autorl-task-clash" in text
    assert "'autorl-fixture-plugin/fixture-add'" in text
    assert "'autorl-task-clash/fixture-add'" in text
    problems = [p.message for p in registry.problems()]
    assert any("supplied by autorl-fixture-plugin and autorl-task-clash" in m for m in problems)


def test_qualified_name_resolves_despite_a_clash(registry: Registry) -> None:
    registry.register(ClashPlugin(), "autorl-task-clash")
    entry = registry.get("task", "autorl-task-clash/fixture-add")
    assert entry.provider == "autorl-task-clash"
    assert registry.get("task", "twin").qualified_name == "autorl-task-clash/twin"
    assert isinstance(registry.create("task", "autorl-fixture-plugin/fixture-add").name, str)


def test_unknown_name_lists_matches_installed_failed_and_pip_hint(registry: Registry) -> None:
    registry._plugins["autorl-task-broken"] = PluginInfo(
        "autorl-task-broken",
        "autorl_task_broken.plugin",
        status="failed",
        error="ImportError: no module named 'datasets'",
    )
    with pytest.raises(RegistryError) as err:
        registry.get("task", "fixtur-add")
    message, hint = err.value.message, err.value.hint
    assert "unknown task 'fixtur-add'" in message
    assert "did you mean: fixture-add" in message
    assert "installed tasks: fixture-add" in message
    assert "plugin 'autorl-task-broken' failed to load: ImportError" in message
    # the close installed name answers a typo: never an invitation to pip install the typo
    assert hint == "use 'fixture-add' ('autorl list task' shows the installed names)"


def test_unknown_kind_lists_the_kinds(registry: Registry) -> None:
    with pytest.raises(RegistryError, match="unknown kind 'taks'") as err:
        registry.entries("taks")
    assert "task, agent, evaluator" in (err.value.hint or "")


def test_factory_missing_the_protocol_is_rejected_precisely(registry: Registry) -> None:
    registry.register(HollowPlugin(), "autorl-report-hollow")
    with pytest.raises(PluginError) as err:
        registry.create("report", "hollow")
    text = str(err.value)
    assert "report 'autorl-report-hollow/hollow'" in text
    assert f"{__name__}:NotAReport does not follow the Report protocol" in text
    assert "missing: render" in text


def test_factory_that_cannot_import_names_the_import_string(registry: Registry) -> None:
    registry.register(HollowPlugin(), "autorl-report-hollow")
    with pytest.raises(PluginError, match="cannot import 'no_such_module_xyz:Nothing'"):
        registry.create("report", "ghost")


def test_bad_factory_options_are_reported(registry: Registry) -> None:
    with pytest.raises(PluginError, match="rejected its options"):
        registry.create("task", "fixture-add", no_such_option=1)


def test_hook_that_raises_is_a_problem_not_a_crash(registry: Registry) -> None:
    registry.register(RaisingPlugin(), "autorl-task-raising")
    assert registry.names("task") == ["fixture-add"]
    messages = [p.message for p in registry.problems()]
    assert "autorl_register_tasks raised ValueError: cannot list tasks today" in messages


def test_spec_of_the_wrong_kind_is_a_problem(registry: Registry) -> None:
    registry.register(WrongSpecPlugin(), "autorl-task-wrong")
    messages = [p.message for p in registry.problems()]
    assert "autorl_register_tasks returned ReportSpec, expected TaskSpec" in messages


def test_misspelt_hook_is_rejected_by_check_pending(registry: Registry) -> None:
    with pytest.raises(PluginError, match="unknown hook 'autorl_register_taks'"):
        registry.register(
            importlib.import_module("autorl_fixture_misspelt.plugin"), "autorl-fixture-misspelt"
        )
    assert registry.failed_plugins()[0].name == "autorl-fixture-misspelt"


def test_invalid_spec_names_are_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="invalid name 'a/b'"):
        TaskSpec(name="a/b", factory="m:C")
    with pytest.raises(ValueError, match=r"factory must look like 'package\.module:Name'"):
        TaskSpec(name="ok", factory="module.Class")


def test_registry_with_builds_an_isolated_registry(tmp_path: Path) -> None:
    from autorl_testing import registry_with

    registry = registry_with("autorl_fixture_plugin.plugin")
    assert registry.names("sandbox") == []
    assert registry.names("report") == ["fixture-summary"]
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "submissions.jsonl").write_text('{"id": 1, "status": "scored", "score": 12.5}\n')
    paths = registry.create("report", "fixture-summary").render(tmp_path, out)
    assert paths[0].read_text().splitlines()[-1] == "- 1: scored 12.5"


def test_an_egress_policy_is_the_installed_egress_component_of_its_name() -> None:
    """``[egress] policy`` is a plain name checked against the installed egress components
    when a run is resolved: ``allowlist`` builds autorl-sandbox-common's proxy, a typo fails
    with the close name, before anything runs."""
    from autorl_runner.setup import resolve

    from autorl.config import RunConfig
    from autorl.errors import ConfigError
    from autorl.registry import get_registry

    def config(policy: str) -> RunConfig:
        egress = {"policy": policy}
        return RunConfig(
            task="gsm8k", agent="scripted", model="tiny", sandbox="local", egress=egress
        )

    registry = get_registry()
    assert resolve(config("allowlist"), registry).egress.name == "allowlist"
    assert resolve(config("none"), registry).egress is None
    with pytest.raises(ConfigError) as err:
        resolve(config("allowlst"), registry)
    assert "[egress] policy 'allowlst'" in err.value.message
    assert "did you mean: allowlist?" in err.value.message and "'allowlist'" in err.value.hint
