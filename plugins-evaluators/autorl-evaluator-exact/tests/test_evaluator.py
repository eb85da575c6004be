"""The exact evaluator on a real (tiny) model, and its input checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autorl_evaluator_exact.contract import ANSWER
from autorl_evaluator_exact.evaluator import ExactMatchEvaluator, read_examples, settings
from autorl_testing import conformance

from autorl.contracts import load_contract
from autorl.errors import ConfigError
from autorl.types import EvalRequest

QUESTIONS = [(a, b) for a, b in ((2, 3), (4, 5), (1, 1), (7, 2), (12, 30), (3, 6))]


def write_eval(path: Path, golds: list[str] | None = None) -> Path:
    golds = golds or [str(a + b) for a, b in QUESTIONS]
    path.write_text(
        "".join(
            json.dumps({"id": f"e{i}", "question": f"What is {a} + {b}?", "answer": gold}) + "\n"
            for i, ((a, b), gold) in enumerate(zip(QUESTIONS, golds, strict=True))
        )
    )
    return path


def request(model: Path, eval_path: Path, work: Path, progress=None, **config) -> EvalRequest:
    return EvalRequest(
        model_dir=model,
        eval_path=eval_path,
        config={"max_new_tokens": 24, "batch_size": 4, **config},
        work_dir=work,
        progress=progress,
        contract=load_contract(ANSWER, "addition_protocol"),
    )


class TestExactConformance(conformance.EvaluatorConformance):
    plugin_module = "autorl_evaluator_exact.plugin"

    def eval_request(self, tmp_path: Path) -> EvalRequest:
        import autorl_model_tiny.model as tiny

        model = tiny.TinyModel().materialize(tmp_path / "models").path
        return request(model, write_eval(tmp_path / "eval.jsonl"), tmp_path / "work")


def test_scores_details_and_progress(tiny_model_dir: Path, tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    result = ExactMatchEvaluator().evaluate(
        request(
            tiny_model_dir,
            write_eval(tmp_path / "eval.jsonl"),
            tmp_path / "work",
            progress=lambda done, total: calls.append((done, total)),
        )
    )
    n = len(QUESTIONS)
    assert result.n == n and 0.0 <= result.score <= 100.0
    assert calls[-1] == (n, n)
    assert result.details_path == tmp_path / "work" / "details.jsonl"
    details = [json.loads(line) for line in result.details_path.read_text().splitlines()]
    assert [d["id"] for d in details] == [f"e{i}" for i in range(n)]
    assert {"output", "extracted", "gold", "correct"} <= set(details[0])
    assert result.metrics["correct"] == sum(d["correct"] for d in details)
    assert result.score == pytest.approx(100.0 * result.metrics["correct"] / n)
    assert 0.0 <= result.metrics["format_rate"] <= 1.0


def test_score_is_exact_match_of_the_extracted_answer(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Gold answers set to what the model says (or to a number it never says) fix the score."""
    first = ExactMatchEvaluator().evaluate(
        request(tiny_model_dir, write_eval(tmp_path / "a.jsonl"), tmp_path / "a")
    )
    details = [json.loads(line) for line in first.details_path.read_text().splitlines()]
    said = [d["extracted"] for d in details]
    assert any(s is not None for s in said), f"the tiny model gave no number at all: {details}"
    # every other example gets a gold the model did say, the rest an impossible one
    golds = [s if (s is not None and i % 2 == 0) else "-987654" for i, s in enumerate(said)]
    expected = sum(g != "-987654" for g in golds)
    second = ExactMatchEvaluator().evaluate(
        request(tiny_model_dir, write_eval(tmp_path / "b.jsonl", golds), tmp_path / "b")
    )
    assert second.metrics["correct"] == expected
    assert second.score == pytest.approx(100.0 * expected / len(golds))


def test_limit_scores_the_first_examples(tiny_model_dir: Path, tmp_path: Path) -> None:
    result = ExactMatchEvaluator().evaluate(
        request(tiny_model_dir, write_eval(tmp_path / "e.jsonl"), tmp_path / "w", limit=2)
    )
    assert result.n == 2


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"max_new_token": 5}, "unknown option 'max_new_token' .did you mean 'max_new_tokens'"),
        ({"batch_size": 0}, "batch_size: Input should be greater than 0 .got 0."),
        ({"max_new_tokens": "many"}, "max_new_tokens: Input should be a valid integer"),
        ({"few_shot": [{"question": "q"}]}, r"few_shot\.0\.solution: Field required"),
    ],
)
def test_bad_config_is_a_precise_error(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings(config)


def test_few_shot_examples_come_first_as_earlier_turns() -> None:
    """Each worked example: the contract's messages for its question (a system message once,
    first), then its solution as the assistant's turn; then the question."""
    from types import SimpleNamespace

    from autorl_evaluator_exact.evaluator import Shot, with_few_shot

    def build_messages(question: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": "S"}, {"role": "user", "content": f"Q: {question}"}]

    contract = SimpleNamespace(build_messages=build_messages)
    shots = [Shot(question="1+1", solution="2"), Shot(question="2+2", solution="4")]
    assert with_few_shot(contract, shots, "3+3") == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Q: 1+1"},
        {"role": "assistant", "content": "2"},
        {"role": "user", "content": "Q: 2+2"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "Q: 3+3"},
    ]
    assert with_few_shot(contract, [], "3+3") == build_messages("3+3")


def test_the_contract_is_checked() -> None:
    assert load_contract(ANSWER, "autorl_task_gsm8k.kit").extract_answer("#### 3") == "3"
    with pytest.raises(ConfigError, match="cannot be imported"):
        load_contract(ANSWER, "no_such_contract_module")
    with pytest.raises(ConfigError, match="lacks build_messages, extract_answer, normalize"):
        load_contract(ANSWER, "json")


def test_without_a_contract_the_error_says_where_it_comes_from(tmp_path: Path) -> None:
    bare = EvalRequest(model_dir=tmp_path, eval_path=tmp_path / "e", config={}, work_dir=tmp_path)
    with pytest.raises(ConfigError, match="needs the task's 'answer' contract"):
        ExactMatchEvaluator().evaluate(bare)


def test_eval_file_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "eval.jsonl"
    path.write_text('{"question": "q", "answer": "1"}\n{"question": "q"}\n')
    with pytest.raises(ConfigError, match=r"eval.jsonl:2: .*'answer'"):
        read_examples(path)
    path.write_text("\n")
    with pytest.raises(ConfigError, match="no example"):
        read_examples(path)


def test_a_broken_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    from autorl.errors import CheckpointError

    (tmp_path / "model").mkdir()
    with pytest.raises(CheckpointError, match=r"config\.json"):
        ExactMatchEvaluator().evaluate(
            request(tmp_path / "model", write_eval(tmp_path / "e.jsonl"), tmp_path / "w")
        )
