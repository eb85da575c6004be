"""The task through the real ``rollout`` evaluator on the shipped tiny model (contract A).

Skipped when autorl-evaluator-rollout or autorl-model-tiny is not installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import autorl_evaluator_rollout  # noqa: F401
import autorl_model_tiny.model as tiny
import pytest
from autorl_testing import evaluate_prepared


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.TinyModel().materialize(tmp_path_factory.mktemp("models")).path


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_rollout_evaluator_scores_the_tiny_model(
    tiny_model_dir: Path, prepare, tmp_path: Path
) -> None:
    prepared = prepare(tmp_path / "cache", eval_size=4)
    result = evaluate_prepared(
        "deepsearchqa", prepared, tiny_model_dir, tmp_path / "work", batch_size=4
    )
    print(json.dumps(dict(result.metrics)))
    assert result.n == 4 and 0.0 <= result.score <= 100.0
    metrics = dict(result.metrics)
    assert metrics["mean_rule_judge"] == 1.0 and metrics["mean_judge_calls"] == 0.0
    assert "mean_searches" in metrics and "mean_answered" in metrics
    rows = [json.loads(line) for line in Path(result.details_path).read_text().splitlines()]
    assert len(rows) == 4 and all(row["steps"] <= 6 for row in rows)
    records = prepared.eval_path.parent / "records"
    if metrics["mean_searches"] > 0:
        assert (records / "searches.jsonl").is_file()
