"""The examples of docs/writing-plugins.md, extracted and followed step by step.

Every fenced block tagged ``file=PATH`` is written to a temporary directory; the three packages
(the ``reverse`` task on the ``exact`` evaluator, the interactive ``guess`` task on ``rollout``,
the ``onestep`` agent) are installed with pip, their conformance tests run with pytest, the real
``autorl`` command must list them and resolve them by bare name, and each completes a real
``autorl run`` on the tiny model in the default sandbox: the docs' agent on ``gsm8k`` and on the
docs' ``reverse`` task (a plugin written only from the docs, end to end), ``guess`` with the
react agent and its scripted driver. If the guide drifts from the code, this test fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from autorl_testing.helpers import run_pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "writing-plugins.md"
AUTORL = str(Path(sys.executable).parent / "autorl")
BLOCK = re.compile(r"^```(\w+) file=(\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def extract(root: Path) -> list[Path]:
    written = []
    for _lang, rel, body in BLOCK.findall(DOC.read_text(encoding="utf-8")):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
        written.append(path)
    return written


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory, pip_install, autorl_env) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("guide")
    files = extract(root)
    project = root / "autorl-task-reverse"
    target = root / "installed"
    pip_install(project, target)
    pip_install(root / "autorl-task-guess", target)
    pip_install(root / "autorl-agent-onestep", target)
    return {"root": root, "project": project, "target": target, "files": files, "env": autorl_env}


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_the_guide_has_the_whole_package(example: dict) -> None:
    names = {p.relative_to(example["root"]).as_posix() for p in example["files"]}
    assert names == {
        "autorl-task-reverse/pyproject.toml",
        "autorl-task-reverse/src/autorl_task_reverse/__init__.py",
        "autorl-task-reverse/src/autorl_task_reverse/plugin.py",
        "autorl-task-reverse/src/autorl_task_reverse/task.py",
        "autorl-task-reverse/src/autorl_task_reverse/contract.py",
        "autorl-task-reverse/tests/test_reverse.py",
        "autorl-task-guess/pyproject.toml",
        "autorl-task-guess/src/autorl_task_guess/__init__.py",
        "autorl-task-guess/src/autorl_task_guess/plugin.py",
        "autorl-task-guess/src/autorl_task_guess/task.py",
        "autorl-task-guess/src/autorl_task_guess/contract.py",
        "autorl-task-guess/tests/test_guess.py",
        "autorl-agent-onestep/pyproject.toml",
        "autorl-agent-onestep/src/autorl_agent_onestep/__init__.py",
        "autorl-agent-onestep/src/autorl_agent_onestep/plugin.py",
        "autorl-agent-onestep/src/autorl_agent_onestep/agent.py",
        "autorl-agent-onestep/src/autorl_agent_onestep/program.py",
        "autorl-agent-onestep/tests/test_onestep.py",
    }
    guess = example["root"] / "autorl-task-guess" / "src" / "autorl_task_guess"
    lines = sum(len(p.read_text().splitlines()) for p in guess.glob("*.py"))
    assert lines <= 110, f"the interactive example grew to {lines} lines"


@pytest.mark.parametrize(
    ("name", "at_least"),
    [("autorl-task-reverse", 10), ("autorl-task-guess", 10), ("autorl-agent-onestep", 2)],
)
@pytest.mark.e2e  # pytest in a subprocess on each guide package
def test_the_guide_conformance_test_passes_from_source(
    example: dict, name: str, at_least: int
) -> None:
    project = example["root"] / name
    env = example["env"](PYTHONPATH=str(project / "src"))
    proc = run_pytest("tests", project, {**env, "PYTEST_ADDOPTS": ""}, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed and int(passed.group(1)) >= at_least, proc.stdout[-2000:]


def autorl(example: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AUTORL, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=example["env"](PYTHONPATH=str(example["target"])),
    )


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_installed_guide_plugin_is_discovered(example: dict) -> None:
    rows = {r["name"]: r for r in json.loads(autorl(example, "plugins", "list", "--json").stdout)}
    plugin = rows["autorl-task-reverse"]
    assert plugin["status"] == "loaded"
    assert plugin["version"] == "0.1.0"
    assert plugin["supplies"] == {"task": ["reverse"]}
    tasks = json.loads(autorl(example, "list", "task", "--json").stdout)
    assert any(t["name"] == "reverse" and t["provider"] == "autorl-task-reverse" for t in tasks)


@pytest.mark.slow  # the module fixture pip-installs three packages (5 CPU-s)
def test_installed_guide_task_resolves_by_bare_name(example: dict) -> None:
    proc = autorl(example, "show", "task", "reverse", "--check", "--json")
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["qualified_name"] == "autorl-task-reverse/reverse"
    assert row["check"] == "OK: autorl_task_reverse.task.ReverseTask"
    doctor = autorl(example, "plugins", "doctor")
    assert doctor.returncode == 0, doctor.stderr
    assert os.path.isdir(example["target"] / "autorl_task_reverse")


def guide_run(example: dict, tmp_path: Path, task: str, *args: str) -> Path:
    """A real ``autorl run`` of ``task`` on the tiny model with the guide's packages installed,
    in the default sandbox; the run directory of a run that exited 0."""
    argv = [
        AUTORL, "run", "--task", task, "--model", "tiny", "--budget", "300",
        "--runs-dir", str(tmp_path / "runs"), "--run-id", task, "--quiet", *args,
    ]  # fmt: skip
    env = example["env"](PYTHONPATH=str(example["target"]), HF_HUB_OFFLINE="1")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return tmp_path / "runs" / task


@pytest.mark.e2e  # real runs of the guide's plugins
def test_the_guide_interactive_task_completes_a_real_run(example: dict, tmp_path: Path) -> None:
    """The published interactive task, installed, through ``autorl run``: the engine loads its
    contract, checks its rows and options, scores the baseline and a submission."""
    import autorl_agent_react.examples as react

    run_dir = guide_run(
        example, tmp_path, "guess", "--agent", "react", "--driver", f"scripted/{react.TINY}"
    )
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["task"]["contract"] == "autorl_task_guess.contract"
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["baseline_score"] is not None and summary["comparable"] is True
    assert any(row["status"] == "scored" for row in summary["submissions"]), summary


@pytest.mark.parametrize(
    ("task", "task_options"),
    [("gsm8k", ("train_size=20", "eval_size=4")), ("reverse", ())],
)
@pytest.mark.e2e  # real runs of the guide's plugins
def test_the_guide_agent_trains_submits_and_is_scored(
    example: dict, tmp_path: Path, task: str, task_options: tuple[str, ...]
) -> None:
    """The docs' agent, installed, in the default sandbox: its program (the runtime's Python,
    no autorl) trains, saves under output/, submits through the grading API and is scored on
    weights that are not the base model's; on ``reverse`` the docs' task and the docs' agent
    make the whole run."""
    flags = [f for option in task_options for f in ("--task-option", option)]
    run_dir = guide_run(
        example, tmp_path, task, "--agent", "onestep", "--agent-option", "steps=2", *flags
    )
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["config"]["agent"] == "onestep"
    assert manifest["config"]["sandbox"] == "isolated"
    if task == "reverse":
        assert manifest["task"]["contract"] == "autorl_task_reverse.contract"
    log = (run_dir / "agent.log").read_text(errors="replace")
    assert "step 2: loss" in log, log[-3000:]
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["baseline_score"] is not None and summary["comparable"] is True
    scored = [row for row in summary["submissions"] if row["status"] == "scored"]
    assert scored and not any(row.get("copy_of_base") for row in scored), summary["submissions"]
    assert (run_dir / "workspace" / "code" / "onestep.py").is_file()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["scoring"]["selection"]["rule"] == "declared", record["scoring"]
