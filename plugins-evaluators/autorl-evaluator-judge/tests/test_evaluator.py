"""The judge evaluator end to end on the tiny model with a scripted judge: score, details, the
disk cache (counted in judge calls), and inputs that must fail early and clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autorl_evaluator_judge.evaluator import JudgeEvaluator, read_examples
from autorl_testing import conformance

from autorl.errors import AutorlError, ConfigError
from autorl.types import EvalRequest
from conftest import EXAMPLES, request, write_eval

FIRST_SHOWN_LOSES = {"default": "M"}
"""Inline driver script: the judge always prefers the output shown second."""


def config(tmp_path: Path, **overrides) -> dict:
    return {
        "judge": "scripted/always-second",
        "judge_options": {"script": FIRST_SHOWN_LOSES},
        "cache_dir": str(tmp_path / "judge-cache"),
        "max_new_tokens": 12,
        "batch_size": 8,
        **overrides,
    }


def calls_logged(work: Path) -> int:
    log = work / "judge_calls.jsonl"
    return len(log.read_text().splitlines()) if log.is_file() else 0


class TestJudgeConformance(conformance.EvaluatorConformance):
    plugin_module = "autorl_evaluator_judge.plugin"

    def eval_request(self, tmp_path: Path) -> EvalRequest:
        import autorl_model_tiny.model as tiny

        model = tiny.TinyModel().materialize(tmp_path / "models").path
        return request(model, write_eval(tmp_path / "e.jsonl"), tmp_path / "w", config(tmp_path))


def test_scores_details_and_a_cache_that_saves_every_call(
    tiny_model_dir: Path, eval_path: Path, tmp_path: Path
) -> None:
    seen: list[tuple[int, int]] = []
    cfg = config(tmp_path)
    first = JudgeEvaluator().evaluate(
        request(tiny_model_dir, eval_path, tmp_path / "a", cfg, lambda d, t: seen.append((d, t)))
    )
    n = len(EXAMPLES)
    assert first.n == n and 0.0 <= first.score <= 100.0
    assert seen[-1] == (2 * n, 2 * n)  # generation, then judging
    m = first.metrics
    assert m["judge"] == "scripted/always-second" and m["judge_scripted"] is True
    assert (m["judge_calls"], m["judge_cached"]) == (n, 0)
    assert calls_logged(tmp_path / "a") == n
    assert m["judge_cost_usd"] == 0.0 and m["judge_input_tokens"] > 0
    assert m["lc_win_rate"] == pytest.approx(first.score)
    details = [json.loads(line) for line in first.details_path.read_text().splitlines()]
    # "M" (second shown) wins: the model wins exactly where its answer was shown second
    for d in details:
        assert d["judge_answer"] == "M"
        assert d["preference"] == (1.0 if d["model_shown_first"] else 2.0)
    wins = sum(not d["model_shown_first"] for d in details)
    assert m["n_wins"] == wins and m["win_rate"] == pytest.approx(100 * wins / n)
    assert 0 < wins < n  # sides are randomised

    second = JudgeEvaluator().evaluate(request(tiny_model_dir, eval_path, tmp_path / "b", cfg))
    assert (second.metrics["judge_calls"], second.metrics["judge_cached"]) == (0, n)
    assert calls_logged(tmp_path / "b") == 0
    assert second.score == pytest.approx(first.score)
    assert second.metrics["win_rate"] == pytest.approx(m["win_rate"])

    uncached = JudgeEvaluator().evaluate(
        request(tiny_model_dir, eval_path, tmp_path / "c", {**cfg, "cache": False})
    )
    assert uncached.metrics["judge_calls"] == n


def test_limit_and_eval_file_errors(tmp_path: Path) -> None:
    path = write_eval(tmp_path / "e.jsonl")
    assert len(read_examples(path, limit=3)) == 3
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instruction": "q", "reference": "a"}\n{"instruction": "q"}\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:2: .*'reference'"):
        read_examples(bad)


def test_a_bad_judge_fails_before_any_generation(eval_path: Path, tmp_path: Path) -> None:
    """The model directory does not exist: the judge error must come first."""
    missing_model = tmp_path / "no-model"
    with pytest.raises(AutorlError, match="unknown option"):
        JudgeEvaluator().evaluate(
            request(
                missing_model,
                eval_path,
                tmp_path / "w",
                config(tmp_path, judge_options={"script": FIRST_SHOWN_LOSES, "colour": 1}),
            )
        )
    with pytest.raises(ConfigError, match="unknown option 'protocol'"):
        JudgeEvaluator().evaluate(
            request(missing_model, eval_path, tmp_path / "w", config(tmp_path, protocol="nope"))
        )
