"""Entry-point discovery end to end: pip-installed plugins seen by the real ``autorl`` script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.mark.slow  # installs a plugin and runs `autorl list` (3.9 CPU-s)
def test_installed_plugin_is_listed_with_what_it_supplies(run_autorl) -> None:
    proc = run_autorl("plugins", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    assert rows["autorl"]["status"] == "loaded"
    assert rows["autorl"]["supplies"]["executor"] == ["local"]
    assert rows["autorl-sandbox-local"]["supplies"] == {"sandbox": ["local"]}
    assert rows["autorl-sandbox-isolated"]["supplies"] == {"sandbox": ["isolated"]}
    fixture = rows["autorl-fixture-plugin"]
    assert fixture["distribution"] == "autorl-fixture-plugin"
    assert fixture["version"] == "0.3.1"
    assert fixture["status"] == "loaded" and fixture["error"] is None
    assert fixture["supplies"] == {
        "task": ["fixture-add"],
        "report": ["fixture-summary"],
        "command": ["fixture-hello"],
    }


def test_plugin_is_invisible_when_not_installed(run_autorl) -> None:
    proc = run_autorl("plugins", "list", "--json", plugins=())
    assert proc.returncode == 0, proc.stderr
    assert "autorl-fixture-plugin" not in {row["name"] for row in json.loads(proc.stdout)}


@pytest.mark.parametrize("kind", ["task", "tasks"])
def test_list_kind_shows_the_plugin_task(run_autorl, kind: str) -> None:
    proc = run_autorl("list", kind, "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    row = next(r for r in rows if r["name"] == "fixture-add")
    assert row["provider"] == "autorl-fixture-plugin"
    assert row["description"].startswith("Two-digit additions")
    table = run_autorl("list", kind)
    assert table.returncode == 0 and "fixture-add" in table.stdout


def test_bare_and_qualified_names_resolve_and_build(run_autorl) -> None:
    bare = run_autorl("show", "task", "fixture-add", "--check", "--json")
    assert bare.returncode == 0, bare.stderr
    row = json.loads(bare.stdout)
    assert row["qualified_name"] == "autorl-fixture-plugin/fixture-add"
    assert row["check"] == "OK: autorl_fixture_plugin.task.AdditionTask"
    qualified = run_autorl("show", "task", "autorl-fixture-plugin/fixture-add", "--json")
    assert json.loads(qualified.stdout)["factory"] == "autorl_fixture_plugin.task:AdditionTask"


def test_each_evaluator_shows_the_contract_it_declares(run_autorl) -> None:
    """The contracts live with their evaluators; the registry shows them: a column of
    ``list evaluators``, and a task's evaluator's contract in ``show task``."""
    rows = {r["name"]: r for r in json.loads(run_autorl("list", "evaluators", "--json").stdout)}
    assert rows["exact"]["contract"] == "answer" and rows["rollout"]["contract"] == "interactive"
    assert rows["code"]["contract_rows"] == "task_id, prompt, test, entry_point"
    assert "contract" in run_autorl("list", "evaluators").stdout
    task = json.loads(run_autorl("show", "task", "fixture-add", "--json").stdout)
    assert task["contract_protocol"] == "autorl_evaluator_exact.contract.AnswerContract"
    assert task["contract_members"].startswith("build_messages, extract_answer, normalize")


def test_unknown_name_is_a_clean_error_with_suggestions(run_autorl) -> None:
    proc = run_autorl("show", "task", "fixture-ad", plugins=("plugin", "broken"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "unknown task 'fixture-ad'" in proc.stderr
    assert "did you mean: fixture-add?" in proc.stderr
    assert "plugin 'autorl-fixture-broken' failed to load" in proc.stderr
    assert "pip install" not in proc.stderr  # a typo is never an installable package name
    assert "hint: use 'fixture-add'" in proc.stderr


def test_plugin_command_runs_and_is_listed_in_help(run_autorl) -> None:
    help_ = run_autorl("--help")
    assert "fixture-hello" in help_.stdout and "proves plugin subcommands" in help_.stdout
    proc = run_autorl("fixture-hello", "bob")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "hello bob from autorl-fixture-plugin"


def test_version_lists_plugin_distributions(run_autorl) -> None:
    proc = run_autorl("version", "--json")
    assert proc.returncode == 0, proc.stderr
    versions = json.loads(proc.stdout)
    assert versions["autorl-fixture-plugin"] == "0.3.1"
    assert versions["autorl"]


# broken plugins ---------------------------------------------------------------------------------

BROKEN = ("plugin", "broken", "misspelt")


@pytest.mark.parametrize(
    "args",
    [("--help",), ("version",), ("plugins", "list"), ("list", "task"), ("fixture-hello",)],
)
def test_a_broken_plugin_leaves_every_command_working(run_autorl, args: tuple[str, ...]) -> None:
    proc = run_autorl(*args, plugins=BROKEN)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def test_plugins_list_shows_the_failure(run_autorl) -> None:
    rows = {
        r["name"]: r
        for r in json.loads(run_autorl("plugins", "list", "--json", plugins=BROKEN).stdout)
    }
    assert rows["autorl-fixture-broken"]["status"] == "failed"
    assert rows["autorl-fixture-broken"]["error"] == (
        "RuntimeError: autorl-fixture-broken is broken on purpose"
    )
    assert rows["autorl-fixture-plugin"]["status"] == "loaded"


def test_doctor_names_the_broken_plugin_and_its_exception(run_autorl) -> None:
    proc = run_autorl("plugins", "doctor", plugins=BROKEN)
    assert proc.returncode != 0
    assert "plugin 'autorl-fixture-broken': RuntimeError: autorl-fixture-broken is broken" in (
        proc.stderr
    )
    assert "plugin.py" in proc.stderr  # the traceback summary points at the failing file
    assert "Traceback" not in proc.stdout


def test_doctor_catches_a_misspelt_hook(run_autorl) -> None:
    proc = run_autorl("plugins", "doctor", plugins=("plugin", "misspelt"))
    assert proc.returncode != 0
    assert "autorl-fixture-misspelt" in proc.stderr
    assert "autorl_register_taks" in proc.stderr
    tasks = json.loads(run_autorl("list", "task", "--json", plugins=("misspelt",)).stdout)
    assert "never-seen" not in {r["name"] for r in tasks}


def test_doctor_is_happy_without_broken_plugins(run_autorl) -> None:
    proc = run_autorl("plugins", "doctor", AUTORL_PLUGINS="autorl,autorl-fixture-plugin")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "all 2 plugins OK"


def test_every_plugin_of_this_repo_passes_doctor(run_autorl) -> None:
    """Whatever distributions of the repo are installed in this venv load cleanly together."""
    proc = run_autorl("plugins", "doctor", plugins=())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("all ") and proc.stdout.strip().endswith(" plugins OK")


def test_strict_mode_makes_a_broken_plugin_fatal(run_autorl) -> None:
    proc = run_autorl("list", "task", plugins=BROKEN, AUTORL_STRICT_PLUGINS="1")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert 'autorl_fixture_broken/plugin.py", line 3' in proc.stderr
    assert "plugin 'autorl-fixture-broken'" in proc.stderr
    assert "RuntimeError: autorl-fixture-broken is broken on purpose" in proc.stderr
    assert "AUTORL_STRICT_PLUGINS" in proc.stderr
    help_ = run_autorl("--help", plugins=BROKEN, AUTORL_STRICT_PLUGINS="1")
    assert help_.returncode == 2 and "autorl-fixture-broken" in help_.stderr


def test_block_list_skips_a_plugin(run_autorl) -> None:
    proc = run_autorl(
        "plugins",
        "doctor",
        plugins=BROKEN,
        AUTORL_BLOCK_PLUGINS="autorl-fixture-broken,autorl-fixture-misspelt",
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(
        run_autorl(
            "plugins",
            "list",
            "--json",
            plugins=BROKEN,
            AUTORL_BLOCK_PLUGINS="autorl-fixture-broken",
        ).stdout
    )
    blocked = {r["name"]: r for r in rows}["autorl-fixture-broken"]
    assert blocked["status"] == "blocked"
    assert blocked["distribution"] == "autorl-fixture-broken" and blocked["version"] == "0.0.1"


def test_allow_list_loads_only_named_plugins(run_autorl) -> None:
    rows = json.loads(
        run_autorl("plugins", "list", "--json", plugins=BROKEN, AUTORL_PLUGINS="autorl").stdout
    )
    status = {r["name"]: r["status"] for r in rows}
    assert status["autorl"] == "loaded"
    assert status["autorl-fixture-plugin"] == "skipped"
    assert status["autorl-fixture-broken"] == "skipped"
    tasks = json.loads(
        run_autorl("list", "task", "--json", plugins=BROKEN, AUTORL_PLUGINS="autorl").stdout
    )
    assert tasks == []


def test_blocking_the_builtins_removes_them(run_autorl) -> None:
    blocked = {"AUTORL_BLOCK_PLUGINS": "autorl"}
    rows = json.loads(run_autorl("list", "executor", "--json", **blocked).stdout)
    # the core's own (the serial `local` executor) is gone; the plugins' executors stay
    assert "local" not in {row["name"] for row in rows}
    assert {row["provider"] for row in rows} == {"autorl-campaign", "autorl-executor-ray"}
    sandboxes = json.loads(run_autorl("list", "sandbox", "--json", **blocked).stdout)
    assert {row["provider"] for row in sandboxes} == {
        "autorl-sandbox-isolated",
        "autorl-sandbox-docker",
        "autorl-sandbox-local",
    }


@pytest.mark.parametrize(
    ("blocked", "message"),
    [
        ("autorl-grading", "every run needs the grader 'api'"),
        ("autorl-sandbox-common", "every run needs the runtime 'harness'"),
    ],
)
def test_a_run_without_a_harness_service_fails_first_naming_its_distribution(
    run_autorl, tmp_path: Path, blocked: str, message: str
) -> None:
    """The engine reaches the grader and the agent runtime only through the registry: without
    their distribution a run stops before any work (no run directory) and says what to
    install, instead of failing half-way or running with less."""
    config = tmp_path / "run.toml"
    config.write_text(
        f'task = "gsm8k"\nmodel = "tiny"\nsandbox = "local"\nruns_dir = "{tmp_path}/runs"\n'
    )
    proc = run_autorl("run", "--config", str(config), AUTORL_BLOCK_PLUGINS=blocked)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert message in out and f"pip install {blocked}" in out, out
    assert "Traceback" not in out
    assert not (tmp_path / "runs").exists()
