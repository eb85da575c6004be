"""What becomes a param, metric or tag, and where the switch and the store come from."""

from __future__ import annotations

import math
from pathlib import Path

from autorl_observer_mlflow import mapping
from autorl_observer_mlflow.settings import read_settings

from autorl.config import RunConfig


def test_the_run_config_flattens_to_dotted_json_params() -> None:
    config = RunConfig.model_validate(
        {
            "task": "gsm8k",
            "run_id": "r1",
            "task_options": {"train_size": 20, "nested": {"k": [1, 2]}},
            "driver_options": {"api_key": "sk-123", "prices": {"input": 1.5}},
        }
    ).model_dump(mode="json")
    params = mapping.config_params(config)
    assert params["task"] == "gsm8k"
    assert params["budget.wall_seconds"] == "480.0"
    assert params["budget.max_tokens"] == "null"
    assert params["keep_checkpoints"] == "false"
    assert params["reports"] == '["basic", "analysis"]'
    assert params["task_options.train_size"] == "20"
    assert params["task_options.nested.k"] == "[1, 2]"
    assert params["driver_options.prices.input"] == "1.5"
    assert params["driver_options.api_key"] == "***"  # a secret never leaves the harness
    assert not any(k.startswith(("run_id", "runs_dir", "agent_options")) for k in params)


def test_keys_and_values_fit_mlflow() -> None:
    params = mapping.config_params({"task_options": {"we!rd:key": "x" * 7000}})
    assert list(params) == ["task_options.we_rd_key"]
    assert len(params["task_options.we_rd_key"]) == mapping.MAX_PARAM_CHARS


def test_summary_numbers_become_metrics_and_nothing_else_does() -> None:
    summary = {
        "baseline_score": 10,
        "best_score": 12.5,
        "improvement": 2.5,
        "best_se": None,
        "improvement_se": float("nan"),
        "process_metrics": {"n_scored": 2, "score_trajectory": [], "monotonic_ratio": None},
        "driver_calls": {"total_tokens": 900, "cost_usd": 0.25, "scripted": True},
        "comparable": True,
    }
    assert mapping.summary_metrics(summary) == {
        "baseline_score": 10.0,
        "best_score": 12.5,
        "improvement": 2.5,
        "process/n_scored": 2.0,
        "driver/tokens": 900.0,
        "driver/cost_usd": 0.25,
    }


def test_a_submission_logs_score_elapsed_se_and_numeric_evaluator_metrics() -> None:
    metrics = mapping.submission_metrics(
        40.0, 12.5, {"score_se": 1.2, "n": 50, "backend": "vllm", "ok": True, "x": math.inf}
    )
    assert metrics == {
        "submission/score": 40.0,
        "submission/elapsed_s": 12.5,
        "submission/score_se": 1.2,
        "submission/eval/n": 50.0,
    }


def test_tags_leave_out_what_is_unknown() -> None:
    tags = mapping.run_tags(
        "r1", "/runs/r1", {"end_reason": "budget", "comparable": False, "error": None}, None
    )
    assert tags == {
        "autorl.run_id": "r1",
        "autorl.run_dir": "/runs/r1",
        "autorl.end_reason": "budget",
        "autorl.comparable": "false",
    }
    assert mapping.campaign_of({}, {"campaign_id": "c-1"}) == "c-1"


def test_autorl_status_maps_to_mlflow_status_and_times_to_millis() -> None:
    assert mapping.mlflow_status({"status": "completed"}) == "FINISHED"
    assert mapping.mlflow_status({"status": "interrupted"}) == "KILLED"
    assert mapping.mlflow_status({"status": "failed"}) == "FAILED"
    assert mapping.mlflow_status({}) == "FAILED"
    assert mapping.millis("1970-01-01T00:00:01.500Z") == 1500
    assert mapping.millis("not a time") is None and mapping.millis(None) is None


def test_switched_on_only_by_autorl_mlflow_tracking_uri() -> None:
    assert read_settings({}) is None
    assert read_settings({"AUTORL_MLFLOW_TRACKING_URI": "  "}) is None
    assert read_settings({"MLFLOW_TRACKING_URI": "sqlite:///x.db"}) is None
    settings = read_settings(
        {"AUTORL_MLFLOW_TRACKING_URI": "http://127.0.0.1:5000", "AUTORL_CAMPAIGN_ID": "c-1"}
    )
    assert settings is not None
    assert (settings.experiment, settings.campaign_id) == ("autorl", "c-1")
    assert settings.new_experiment_artifacts() is None  # the server decides


def test_a_sqlite_store_keeps_new_artifacts_beside_its_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    absolute = read_settings({"AUTORL_MLFLOW_TRACKING_URI": "sqlite:////data/ml/mlflow.db"})
    relative = read_settings({"AUTORL_MLFLOW_TRACKING_URI": "sqlite:///store/mlflow.db"})
    chosen = read_settings(
        {
            "AUTORL_MLFLOW_TRACKING_URI": "sqlite:///store/mlflow.db",
            "AUTORL_MLFLOW_ARTIFACT_LOCATION": "s3://bucket/autorl",
            "AUTORL_MLFLOW_EXPERIMENT": "gsm8k-sweep",
        }
    )
    assert absolute and relative and chosen
    assert absolute.new_experiment_artifacts() == "/data/ml/mlartifacts"
    assert relative.new_experiment_artifacts() == str(tmp_path / "store" / "mlartifacts")
    assert chosen.new_experiment_artifacts() == "s3://bucket/autorl"
    assert chosen.experiment == "gsm8k-sweep"
