"""The example of docs/writing-plugins.md, extracted and followed step by step.

Every fenced block tagged ``file=PATH`` is written to a temporary directory; the package is then
installed with pip, its conformance test is run with pytest, and the real ``autorl`` command must
list it and resolve its task by bare name. If the guide drifts from the code, this test fails.
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
    return {"root": root, "project": project, "target": target, "files": files, "env": autorl_env}


def test_the_guide_has_the_whole_package(example: dict) -> None:
    names = {p.relative_to(example["root"]).as_posix() for p in example["files"]}
    assert names == {
        "autorl-task-reverse/pyproject.toml",
        "autorl-task-reverse/src/autorl_task_reverse/__init__.py",
        "autorl-task-reverse/src/autorl_task_reverse/plugin.py",
        "autorl-task-reverse/src/autorl_task_reverse/task.py",
        "autorl-task-reverse/tests/test_reverse.py",
    }


def test_the_guide_conformance_test_passes_from_source(example: dict) -> None:
    env = example["env"](PYTHONPATH=str(example["project"] / "src"))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=example["project"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "PYTEST_ADDOPTS": ""},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed and int(passed.group(1)) >= 10, proc.stdout[-2000:]


def autorl(example: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AUTORL, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=example["env"](PYTHONPATH=str(example["target"])),
    )


def test_installed_guide_plugin_is_discovered(example: dict) -> None:
    rows = {r["name"]: r for r in json.loads(autorl(example, "plugins", "list", "--json").stdout)}
    plugin = rows["autorl-task-reverse"]
    assert plugin["status"] == "loaded"
    assert plugin["version"] == "0.1.0"
    assert plugin["supplies"] == {"task": ["reverse"]}
    tasks = json.loads(autorl(example, "list", "task", "--json").stdout)
    assert any(t["name"] == "reverse" and t["provider"] == "autorl-task-reverse" for t in tasks)


def test_installed_guide_task_resolves_by_bare_name(example: dict) -> None:
    proc = autorl(example, "show", "task", "reverse", "--check", "--json")
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["qualified_name"] == "autorl-task-reverse/reverse"
    assert row["check"] == "OK: autorl_task_reverse.task.ReverseTask"
    doctor = autorl(example, "plugins", "doctor")
    assert doctor.returncode == 0, doctor.stderr
    assert os.path.isdir(example["target"] / "autorl_task_reverse")
