"""Real `autorl run`s through the CLI with the observer installed (its real entry point), read
back with ``MlflowClient``: what a logged run holds, that nothing is logged without the opt-in,
and that a broken tracking store never fails a run.

The runs: the tiny model, gsm8k with tiny splits, the react agent on a scripted driver (no LLM)
that trains one checkpoint and submits it, a broken one and the same checkpoint again, so
the submission ids 1 (scored), 2 (failed) and 3 (duplicate, scored) are all there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import autorl_agent_react.examples as examples
import autorl_driver_scripted  # noqa: F401
import autorl_model_tiny  # noqa: F401
import autorl_task_gsm8k  # noqa: F401
import pytest
import yaml
from autorl_observer_mlflow import plugin
from autorl_testing.runs import run_cache

from autorl.events import RunEndEvent

pytestmark = pytest.mark.slow  # three real runs: about a minute on a busy 2-core machine

AUTORL = str(Path(sys.executable).parent / "autorl")
TINY_TASK = ["--task-option", "train_size=20", "--task-option", "eval_size=4"]
EXPERIMENT = "autorl-tests"


def submit(path: str) -> dict[str, Any]:
    return {"text": f"Submit {path}.", "tool_calls": [{"name": "submit", "arguments": {
        "model_path": path}}]}  # fmt: skip


def write_script(root: Path) -> Path:
    """The shipped tiny example, plus a broken checkpoint and a duplicate after the first."""
    script = yaml.safe_load(Path(examples.TINY).read_text())
    first = next(i for i, r in enumerate(script["replies"]) if isinstance(r, dict) and any(
        c["name"] == "submit" for c in r.get("tool_calls", [])))  # fmt: skip
    junk = {
        "name": "shell",
        "arguments": {
            "command": "mkdir -p output/junk && echo '{not json' > output/junk/config.json"
        },
    }
    script["replies"][first + 1 : first + 1] = [
        {"text": "A broken checkpoint.", "tool_calls": [junk]},
        submit("output/junk"),
        submit("output/v1"),
    ]
    path = root / "three_submissions.yaml"
    path.write_text(yaml.safe_dump(script))
    return path


def write_quick_script(root: Path) -> Path:
    """A driver that ends the agent at once: the cheapest run that still has a start and end."""
    path = root / "quick.yaml"
    path.write_text(yaml.safe_dump({"replies": ["Nothing to do here."]}))
    return path


def autorl_run(root: Path, run_id: str, script: Path, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AUTORL_", "MLFLOW_"))}
    env = {
        **base,
        "AUTORL_CACHE": str(run_cache(root)),
        "HF_HUB_OFFLINE": "1",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        **env,
    }
    args = ["--agent", "react", "--driver", f"scripted/{script}", "--budget", "300"]
    return subprocess.run(
        [AUTORL, "run", "--task", "gsm8k", "--model", "tiny", *args, *TINY_TASK,
         "--runs-dir", str(root / "runs"), "--run-id", run_id],
        env=env, cwd=root, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def events_of(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("observer-runs")


@pytest.fixture(scope="module")
def logged(root: Path) -> dict[str, Any]:
    uri = f"sqlite:///{root / 'store' / 'mlflow.db'}"
    proc = autorl_run(
        root, "logged", write_script(root),
        AUTORL_MLFLOW_TRACKING_URI=uri, AUTORL_MLFLOW_EXPERIMENT=EXPERIMENT,
        AUTORL_CAMPAIGN_ID="campaign-7", AUTORL_CAMPAIGN_CELL="0123abcd4567",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = root / "runs" / "logged"
    from mlflow import MlflowClient  # 3 CPU-s to import: not at collection, on every worker

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment is not None, "no experiment was created"
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1, runs
    return {
        "proc": proc,
        "uri": uri,
        "run_dir": run_dir,
        "summary": json.loads((run_dir / "report" / "summary.json").read_text()),
        "client": client,
        "experiment": experiment,
        "run": runs[0],
    }


def history(client: Any, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def test_params_are_the_run_config_flattened(logged: dict) -> None:
    params = logged["run"].data.params
    driver = logged["summary"]["driver"]
    assert {k: params[k] for k in ("task", "agent", "model", "driver", "seed", "sandbox")} == {
        "task": "gsm8k", "agent": "react", "model": "tiny", "driver": driver, "seed": "0",
        "sandbox": "isolated",
    }  # fmt: skip
    assert params["budget.wall_seconds"] == "300.0"
    assert params["budget.max_submissions"] == "8"
    assert params["budget.max_tokens"] == "null"
    assert params["task_options.train_size"] == "20"
    assert params["task_options.eval_size"] == "4"
    assert params["reports"] == '["basic", "analysis"]'
    assert params["metric"] == "accuracy" and params["task_version"] == "1"
    assert "run_id" not in params and "runs_dir" not in params  # tags, not settings


def test_each_valid_submission_is_a_metric_at_its_id(logged: dict) -> None:
    client, run_id, summary = logged["client"], logged["run"].info.run_id, logged["summary"]
    rows = {row["id"]: row for row in summary["submissions"]}
    assert [rows[i]["status"] for i in (1, 2, 3)] == ["scored", "failed", "duplicate"]
    scores = history(client, run_id, "submission/score")
    assert scores == [(1, rows[1]["score"]), (3, rows[3]["score"])]
    elapsed = history(client, run_id, "submission/elapsed_s")
    assert elapsed == [(1, rows[1]["elapsed_s"]), (3, rows[3]["elapsed_s"])]
    assert elapsed[0][1] < elapsed[1][1]
    # the evaluator's own numbers come with the evaluated one (a duplicate is not re-evaluated)
    # (n: the examples the agent's submissions are scored on, the dev split under sealed)
    n = float(summary["baseline_n"])
    assert history(client, run_id, "submission/eval/n") == [(1, n)]


def test_run_results_and_driver_spend_are_metrics(logged: dict) -> None:
    metrics, summary = logged["run"].data.metrics, logged["summary"]
    assert metrics["baseline_score"] == summary["baseline_score"]
    assert metrics["best_score"] == summary["best_score"]
    assert metrics.get("improvement") == summary["improvement"]
    assert metrics.get("score") == summary["score"]  # the run's score (sealed: test)
    assert metrics.get("baseline") == summary["baseline"]
    assert metrics["baseline_n"] == summary["baseline_n"]
    # every evaluator reports its standard error now (exact: binomial), logged as summarised
    assert summary["baseline_se"] is not None
    assert metrics["baseline_se"] == summary["baseline_se"]
    assert metrics.get("best_se") == summary["best_se"]
    calls = summary["driver_calls"]
    assert metrics["driver/tokens"] == calls["total_tokens"] > 0
    assert metrics["driver/calls"] == calls["calls"] > 0
    assert metrics["driver/cost_usd"] == calls["cost_usd"]
    assert metrics["process/n_submissions"] == 3
    assert metrics["process/n_failed"] == 1
    # the baseline is logged once, at the first submission (live), not again at the end
    assert (
        len(logged["client"].get_metric_history(logged["run"].info.run_id, "baseline_score")) == 1
    )


def test_tags_say_which_run_and_how_it_ended(logged: dict) -> None:
    run, summary = logged["run"], logged["summary"]
    tags = run.data.tags
    assert tags["mlflow.runName"] == "logged" == run.info.run_name
    assert tags["autorl.run_id"] == "logged"
    assert tags["autorl.run_dir"] == str(logged["run_dir"])
    assert tags["autorl.end_reason"] == summary["end_reason"] == "agent_exit"
    assert tags["autorl.comparable"] == "true"
    assert tags["autorl.status"] == "completed"
    assert tags["autorl.version"] == summary["versions"]["autorl"]
    assert tags["autorl.campaign_id"] == "campaign-7"
    assert tags["autorl.campaign_cell"] == "0123abcd4567"
    assert tags["autorl.hash.eval"] == summary["hashes"]["eval"]
    assert run.info.status == "FINISHED"
    assert run.info.end_time >= run.info.start_time


def test_the_report_directory_is_the_artifacts(logged: dict, tmp_path: Path) -> None:
    client, run_id = logged["client"], logged["run"].info.run_id
    names = {Path(f.path).name for f in client.list_artifacts(run_id, "report")}
    assert {"summary.json", "report.md", "score_over_time.png"} <= names
    local = Path(client.download_artifacts(run_id, "report/summary.json", str(tmp_path)))
    assert json.loads(local.read_text()) == logged["summary"]
    # a new experiment of a sqlite store keeps its artifacts beside the database, not in cwd
    store = Path(logged["uri"].removeprefix("sqlite:///"))
    assert logged["experiment"].artifact_location == str(store.parent / "mlartifacts")
    assert not (logged["run_dir"].parent.parent / "mlruns").exists()


def test_run_end_alone_logs_the_whole_run_once(
    logged: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When live logging failed or ran in another process (`autorl resume`), the end hook writes
    the run from the harness's records; a second end finds that run instead of adding one."""
    uri = f"sqlite:///{tmp_path / 'replay.db'}"
    monkeypatch.setenv("AUTORL_MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.delenv("AUTORL_CAMPAIGN_ID", raising=False)
    monkeypatch.delenv("AUTORL_CAMPAIGN_CELL", raising=False)
    event = RunEndEvent("logged", logged["run_dir"])
    plugin.autorl_on_run_end(event)
    plugin.autorl_on_run_end(event)
    from mlflow import MlflowClient  # 3 CPU-s to import: not at collection, on every worker

    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("autorl").experiment_id])
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED" and run.data.params["task"] == "gsm8k"
    assert [s for s, _ in history(client, run.info.run_id, "submission/score")] == [1, 3]
    assert run.data.metrics["baseline_score"] == logged["summary"]["baseline_score"]
    assert "autorl.campaign_id" not in run.data.tags
    assert client.list_artifacts(run.info.run_id, "report")


def test_nothing_is_logged_without_the_opt_in(root: Path) -> None:
    """MLflow's own MLFLOW_TRACKING_URI (a team's global setting) does not switch it on."""
    quiet = root / "quiet"
    quiet.mkdir()
    team_store = quiet / "team.db"
    proc = autorl_run(
        quiet, "quiet", write_quick_script(quiet), MLFLOW_TRACKING_URI=f"sqlite:///{team_store}"
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert sorted(p.name for p in quiet.iterdir()) == ["cache", "quick.yaml", "runs"]
    assert not [e for e in events_of(quiet / "runs" / "quiet") if e["event"] == "observer_failed"]
    assert "MLflow logging" not in proc.stderr and "mlflow.store" not in proc.stderr


def test_a_broken_tracking_store_never_fails_the_run(root: Path) -> None:
    broken = root / "broken"
    broken.mkdir()
    (broken / "not-a-directory").write_text("a file where the store's directory should be\n")
    uri = f"sqlite:///{broken / 'not-a-directory' / 'mlflow.db'}"
    proc = autorl_run(broken, "broken", write_quick_script(broken), AUTORL_MLFLOW_TRACKING_URI=uri)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = broken / "runs" / "broken"
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["status"] == "completed"
    failed = [e for e in events_of(run_dir) if e["event"] == "observer_failed"]
    assert [e["plugin"] for e in failed] == ["autorl-observer-mlflow"] * 2
    assert "autorl_on_run_start" in failed[0]["error"] and "(run start)" in failed[0]["error"]
    assert "autorl_on_run_end" in failed[1]["error"] and "(run end)" in failed[1]["error"]
    assert all("AUTORL_MLFLOW_TRACKING_URI" in e["error"] for e in failed)
    assert "MLflow logging of run 'broken' (run start)" in proc.stderr  # seen on the console
    assert "Traceback" not in proc.stderr + proc.stdout
