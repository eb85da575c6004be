"""The reference split, the kit (train problems only) and the train reward."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from autorl_task_humaneval import kit
from autorl_task_humaneval.task import HumanEvalTask

from autorl.errors import ConfigError
from autorl.types import TaskContext


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory):
    return HumanEvalTask().prepare(TaskContext(cache_dir=tmp_path_factory.mktemp("cache")))


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_reference_split_82_82_disjoint(prepared) -> None:
    train, evals = rows(prepared.train_files[0]), rows(prepared.eval_path)
    assert len(train) == len(evals) == 82
    assert train[0]["task_id"] == "HumanEval/0" and evals[0]["task_id"] == "HumanEval/82"
    assert not {r["task_id"] for r in train} & {r["task_id"] for r in evals}
    assert set(train[0]) == {"task_id", "prompt", "canonical_solution", "test", "entry_point"}
    assert prepared.evaluator == "code" and prepared.metric == "pass@1"
    assert prepared.contract == "autorl_task_humaneval.kit"
    assert "pass@1" in prepared.description and "384" in prepared.description


def test_kit_holds_no_eval_problem(prepared) -> None:
    files = list(prepared.kit_dir.iterdir())
    assert [f.name for f in files] == ["autorl_kit.py"]
    text = files[0].read_text() + prepared.train_files[0].read_text()
    for problem in rows(prepared.eval_path):
        assert problem["prompt"] not in text
        assert problem["task_id"] + '"' not in text


def test_workspace_kit_loads_train_and_rewards(prepared, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("autorl_kit", prepared.kit_dir / "autorl_kit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    train = module.load_train(prepared.train_files[0])
    problem = train[2]
    assert module.build_prompt(problem) == problem["prompt"]
    assert module.reward(problem["canonical_solution"], problem) == 1.0
    assert module.reward("    return None\n", problem) == 0.0
    assert module.reward("    while True:\n        pass\n", problem, timeout=1.0) == 0.0
    with pytest.raises(FileNotFoundError, match="AUTORL_WORKSPACE"):
        module.load_train(tmp_path / "nope.jsonl")


def test_extract_code_continuation_and_fence() -> None:
    problem = {"prompt": 'def add(a, b):\n    """Add."""\n', "entry_point": "add"}
    code = kit.extract_code("    return a + b\n\nprint(add(1, 2))\n", problem)
    assert code == problem["prompt"] + "    return a + b\n"
    fenced = "Here you go:\n```python\ndef add(a, b):\n    return a + b\n```\nDone."
    namespace: dict = {}
    exec(kit.extract_code(fenced, problem), namespace)
    assert namespace["add"](2, 3) == 5


def test_bad_options_are_precise_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown option"):
        HumanEvalTask().prepare(TaskContext(cache_dir=tmp_path, options={"splt": "x"}))
    with pytest.raises(ConfigError, match=r"split: Input should be .reference."):
        HumanEvalTask().prepare(TaskContext(cache_dir=tmp_path, options={"split": "random"}))
    with pytest.raises(ConfigError, match="not a file"):
        HumanEvalTask().prepare(
            TaskContext(cache_dir=tmp_path, options={"data_path": str(tmp_path / "x.jsonl")})
        )


def test_registered_through_entry_point() -> None:
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="autorl.plugins")}
    assert {"autorl-task-humaneval", "autorl-evaluator-code"} <= names
