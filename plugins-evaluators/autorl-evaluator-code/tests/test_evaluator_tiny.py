"""The evaluator end to end: the shipped tiny model generates, the sandbox executes."""

from __future__ import annotations

import json
from pathlib import Path

import autorl_model_tiny.model as tiny
import autorl_task_humaneval.data as data
import pytest
from autorl_evaluator_code.contract import CODE

from autorl.contracts import load_contract
from autorl.types import EvalRequest


def test_tiny_model_on_four_problems(tmp_path: Path) -> None:
    from autorl_evaluator_code.evaluator import CodeEvaluator

    model = tiny.TinyModel().materialize(tmp_path / "models")
    eval_path = tmp_path / "eval.jsonl"
    rows = data.load_problems()[82:86]
    eval_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CodeEvaluator().evaluate(
        EvalRequest(
            model_dir=model.path,
            eval_path=eval_path,
            config={"max_new_tokens": 24, "batch_size": 4, "timeout_s": 5.0},
            work_dir=tmp_path / "work",
            contract=load_contract(CODE, "autorl_task_humaneval.kit"),
        )
    )
    assert result.n == 4
    assert 0.0 <= result.score <= 100.0
    assert result.metrics["samples"] == 4 and result.metrics["sandbox"]["rlimit_as"]
    details = [json.loads(line) for line in result.details_path.read_text().splitlines()]
    assert [d["task_id"] for d in details] == [r["task_id"] for r in rows]
    assert all(d["samples"][0]["status"] in ("passed", "failed", "timeout") for d in details)


def test_tiny_model_with_the_reference_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HumanEval's reference prompt end to end: the task's evaluator config, chat messages
    through the tiny model's chat template, no stop strings, greedy; what the generator got is
    exactly the workspace kit's prompt."""
    from autorl_evaluator_code.evaluator import CodeEvaluator
    from autorl_hf import generation
    from autorl_task_humaneval.task import HumanEvalTask

    from autorl.types import TaskContext

    prepared = HumanEvalTask().prepare(
        TaskContext(cache_dir=tmp_path / "cache", options={"prompt": "reference"})
    )
    seen: list[tuple[list, dict]] = []
    real = generation.Generator.completions

    def spy(self, prompts, **kwargs):
        seen.append((list(prompts), kwargs))
        return real(self, prompts, **kwargs)

    monkeypatch.setattr(generation.Generator, "completions", spy)
    model = tiny.TinyModel().materialize(tmp_path / "models")
    rows = data.load_problems()[82:85]
    eval_path = tmp_path / "eval.jsonl"
    eval_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # the reference's 8192 tokens exceed the tiny model's 1024 positions: 24 here
    config = {**prepared.evaluator_config, "max_new_tokens": 24, "device": "cpu"}
    result = CodeEvaluator().evaluate(
        EvalRequest(
            model_dir=model.path,
            eval_path=eval_path,
            config=config,
            work_dir=tmp_path / "work",
            contract=load_contract(CODE, prepared.contract),
        )
    )
    assert result.n == 3 and 0.0 <= result.score <= 100.0
    ((prompts, kwargs),) = seen
    assert kwargs["stop"] == () and kwargs["temperature"] == 0.0
    workspace = tmp_path / "kit"
    workspace.mkdir()
    for name in ("autorl_kit.py", "config.json"):
        (workspace / name).write_bytes((Path(prepared.kit_dir) / name).read_bytes())
    import importlib.util

    spec = importlib.util.spec_from_file_location("workspace_kit", workspace / "autorl_kit.py")
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    assert prompts == [kit.build_prompt(r) for r in rows]
    assert prompts[0][0]["role"] == "user" and len(prompts[0]) == 1
    details = [json.loads(line) for line in result.details_path.read_text().splitlines()]
    assert [d["task_id"] for d in details] == [r["task_id"] for r in rows]
