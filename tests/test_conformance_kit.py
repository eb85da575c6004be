"""The conformance kit run on real components: the fixture plugin and the core's built-ins.

Also checks that the kit fails when it should: a subclass pointed at a broken component must
produce failing tests, not silently pass.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from autorl_testing import (
    ExecutorConformance,
    ReportConformance,
    TaskConformance,
    heavy_modules_imported_by,
)
from autorl_testing.helpers import run_pytest, task_plugin_source


class TestFixtureTask(TaskConformance):
    plugin_module = "autorl_fixture_plugin.plugin"
    component = "fixture-add"


class TestFixtureReport(ReportConformance):
    plugin_module = "autorl_fixture_plugin.plugin"

    def run_dir(self, tmp_path: Path) -> Path:
        run = tmp_path / "run"
        run.mkdir()
        (run / "submissions.jsonl").write_text('{"id": 1, "status": "scored", "score": 40}\n')
        return run


class TestBuiltinExecutor(ExecutorConformance):
    plugin_module = "autorl.builtins"


def test_heavy_import_probe_sees_heavy_imports() -> None:
    assert heavy_modules_imported_by("json", heavy=("json", "torch")) == ["json"]
    assert heavy_modules_imported_by("autorl.builtins") == []


LEAKY_TASK = task_plugin_source(
    "leaky",
    "leaky_plugin",
    r"""
    ctx.cache_dir.mkdir(parents=True, exist_ok=True)
    rows = [{"q": str(i)} for i in range(5)]
    train, eval_path = ctx.cache_dir / "train.jsonl", ctx.cache_dir / "eval.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in rows))
    eval_path.write_text(json.dumps(rows[2]) + "\n")
    """,
)

LEAKY_TEST = """
from autorl_testing import TaskConformance


class TestLeaky(TaskConformance):
    plugin_module = "leaky_plugin"
"""


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_kit_fails_a_task_whose_train_split_holds_an_eval_example(tmp_path: Path) -> None:
    (tmp_path / "leaky_plugin.py").write_text(textwrap.dedent(LEAKY_TASK))
    (tmp_path / "test_leaky.py").write_text(textwrap.dedent(LEAKY_TEST))
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = run_pytest("test_leaky.py", tmp_path, env, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # the leak, and (a second finding) no 'answer' contract for the exact evaluator it names
    assert "2 failed" in proc.stdout, proc.stdout
    assert "test_train_split_is_disjoint_from_eval" in proc.stdout
    assert "contains an eval example" in proc.stdout
    assert "test_fits_the_evaluator_it_names" in proc.stdout
    assert "names no implementation of the 'answer' contract" in proc.stdout
