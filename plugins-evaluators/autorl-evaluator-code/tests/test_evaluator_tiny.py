"""The evaluator end to end: the shipped tiny model generates, the sandbox executes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autorl.contracts import load_contract
from autorl.types import EvalRequest

tiny = pytest.importorskip("autorl_model_tiny.model")
data = pytest.importorskip("autorl_task_humaneval.data")


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
            contract=load_contract("code", "autorl_task_humaneval.kit"),
        )
    )
    assert result.n == 4
    assert 0.0 <= result.score <= 100.0
    assert result.metrics["samples"] == 4 and result.metrics["sandbox"]["rlimit_as"]
    details = [json.loads(line) for line in result.details_path.read_text().splitlines()]
    assert [d["task_id"] for d in details] == [r["task_id"] for r in rows]
    assert all(d["samples"][0]["status"] in ("passed", "failed", "timeout") for d in details)
