"""The MLflow side: one MLflow run per autorl run, written through ``MlflowClient``.

Never MLflow's fluent API: its process-wide "active run" would mix autorl runs that share a
process (a campaign's pool). Imported by the hooks only when logging is switched on, so MLflow
is never loaded by ``autorl --help`` or by a run that does not log.

The run end is self-sufficient: it writes every param, metric, tag and artifact that is not in
the MLflow run yet (creating the run if the start failed, or finding it by its tags after
``autorl resume``), so live logging during the run is a convenience that may fail without
losing the result.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from autorl_records import RunRecord, load_run
from autorl_records import summary as build_summary
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException

from autorl.errors import AutorlError
from autorl.events import RunEndEvent, RunStartEvent, SubmissionEvent
from autorl_observer_mlflow import mapping
from autorl_observer_mlflow.settings import EXPERIMENT, Settings

BATCH_PARAMS = 100  # MLflow's limits per log_batch call
BATCH_METRICS = 1000


@dataclass
class LiveRun:
    """What this process knows about one autorl run it is logging."""

    mlflow_run_id: str
    client: MlflowClient
    run_dir: Path | None = None
    baseline_logged: bool = False
    received: dict[int, tuple[float | None, str | None]] = field(default_factory=dict)
    logged: set[int] = field(default_factory=set)  # submission ids whose score is logged


_lock = threading.RLock()  # the grader notifies from its own threads
_clients: dict[str, MlflowClient] = {}
_live: dict[str, LiveRun] = {}  # autorl run id -> its MLflow run, while live logging works


def defer(run_id: str) -> None:
    """Stop live logging of a run after a failure; its end tries once more, whole."""
    with _lock:
        _live.pop(run_id, None)


def client_for(settings: Settings) -> MlflowClient:
    with _lock:
        client = _clients.get(settings.tracking_uri)
        if client is None:
            client = _clients[settings.tracking_uri] = MlflowClient(settings.tracking_uri)
        return client


def experiment_id(client: MlflowClient, settings: Settings) -> str:
    experiment = client.get_experiment_by_name(settings.experiment)
    if experiment is None:
        try:
            return client.create_experiment(
                settings.experiment, artifact_location=settings.new_experiment_artifacts()
            )
        except MlflowException:  # created meanwhile by another run of a campaign
            experiment = client.get_experiment_by_name(settings.experiment)
            if experiment is None:
                raise
    if experiment.lifecycle_stage != "active":
        raise RuntimeError(
            f"experiment {settings.experiment!r} is deleted in this store: restore it "
            f"(mlflow experiments restore --experiment-id {experiment.experiment_id}) "
            f"or set {EXPERIMENT} to another name"
        )
    return experiment.experiment_id


def find_run(client: MlflowClient, settings: Settings, run_id: str, run_dir: str) -> str | None:
    """The MLflow run an earlier process opened for this autorl run (``autorl resume``)."""
    if "'" in run_id:
        return None
    experiment = client.get_experiment_by_name(settings.experiment)
    if experiment is None:
        return None
    found = client.search_runs(
        [experiment.experiment_id],
        filter_string=f"tags.`autorl.run_id` = '{run_id}'",
        order_by=["attributes.start_time DESC"],
        max_results=20,
    )
    for run in found:
        if run.data.tags.get("autorl.run_dir") == run_dir:
            return run.info.run_id
    return None


# the three moments --------------------------------------------------------------------------------


def start(settings: Settings, event: RunStartEvent) -> None:
    """Open the MLflow run, named after the autorl run, with the run config as params."""
    client = client_for(settings)
    with _lock:
        tags = {
            "autorl.run_id": event.run_id,
            "autorl.run_dir": str(event.run_dir),
            "autorl.status": "running",
            "autorl.version": _autorl_version(),
            "autorl.campaign_id": settings.campaign_id or mapping.campaign_of(event.config),
            "autorl.campaign_cell": settings.campaign_cell,
        }
        run = client.create_run(
            experiment_id(client, settings),
            run_name=event.run_id,
            start_time=_now(),
            tags={k: v for k, v in tags.items() if v},
        )
        _live[event.run_id] = live = LiveRun(run.info.run_id, client, Path(event.run_dir))
        _log_params(live, mapping.config_params(event.config), existing={})


def submission(settings: Settings, event: SubmissionEvent) -> None:
    """A valid submission's score (and elapsed time, standard error) at step = its id."""
    with _lock:
        live = _live.get(event.run_id)
        if live is None:  # start failed, or ran in another process (`autorl resume`): the end
            return  # logs the submissions from the harness's records
        if not live.baseline_logged:  # scored before the first submission
            _log_baseline(live)
        record = event.record
        if event.status == "received":
            live.received[event.submission_id] = (record.get("elapsed_s"), record.get("time"))
        if event.status not in mapping.VALID_STATUSES or event.score is None:
            return
        if event.submission_id in live.logged:
            return
        elapsed, when = live.received.get(
            event.submission_id, (record.get("elapsed_s"), record.get("time"))
        )
        metrics = mapping.submission_metrics(event.score, elapsed, record.get("metrics") or {})
        _log_metrics(live, metrics, step=event.submission_id, timestamp=mapping.millis(when))
        live.logged.add(event.submission_id)


def end(settings: Settings, event: RunEndEvent) -> None:
    """Everything not logged yet, the report as artifacts, then the MLflow run's end."""
    run_dir = Path(event.run_dir)
    try:
        record: RunRecord | None = load_run(run_dir)
    except AutorlError:  # failed before its manifest: nothing was started, nothing to log
        record = None
    with _lock:
        live = _live.pop(event.run_id, None)
        if live is None and record is None:
            return
        summary = build_summary(record) if record else {}
        if live is None:
            started = mapping.millis(summary.get("started"))
            live = _open_for_end(settings, event.run_id, str(run_dir), started)
        existing = live.client.get_run(live.mlflow_run_id).data
        config = record.config if record else {}
        params = {**mapping.config_params(config), **mapping.summary_params(summary)}
        _log_params(live, params, existing=existing.params)
        campaign = settings.campaign_id or mapping.campaign_of(config, summary)
        tags = mapping.run_tags(
            event.run_id, str(run_dir), summary, campaign, settings.campaign_cell
        )
        _log_tags(live, tags)
        ended = mapping.millis(summary.get("ended")) or _now()
        if record is not None:
            _sync_submissions(live, record)
        final = mapping.summary_metrics(summary)
        if live.baseline_logged:
            final = {k: v for k, v in final.items() if k not in mapping.BASELINE_METRICS}
        _log_metrics(live, final, step=0, timestamp=ended)
        report = run_dir / "report"
        if report.is_dir():
            live.client.log_artifacts(live.mlflow_run_id, str(report), "report")
        live.client.set_terminated(
            live.mlflow_run_id, status=mapping.mlflow_status(summary), end_time=ended
        )


# helpers ----------------------------------------------------------------------------------------


def _open_for_end(settings: Settings, run_id: str, run_dir: str, started: int | None) -> LiveRun:
    """The run's MLflow run when its start was not logged here: found by tags, else created."""
    client = client_for(settings)
    found = find_run(client, settings, run_id, run_dir)
    if found is None:
        run = client.create_run(
            experiment_id(client, settings),
            run_name=run_id,
            start_time=started or _now(),
            tags={"autorl.run_id": run_id, "autorl.run_dir": run_dir},
        )
        found = run.info.run_id
    return LiveRun(found, client)


def _log_baseline(live: LiveRun) -> None:
    """The baseline as soon as it exists, so a long run's charts have it from the start."""
    path = live.run_dir / "baseline.json" if live.run_dir else None
    try:
        baseline = json.loads(path.read_text(encoding="utf-8")) if path else None
    except (OSError, ValueError):
        return  # not scored yet, or being written: the end logs it
    if not isinstance(baseline, dict):
        return
    metrics = mapping.baseline_metrics(baseline)
    if metrics:
        _log_metrics(live, metrics, step=0, timestamp=None)
        live.baseline_logged = True


def _sync_submissions(live: LiveRun, record: RunRecord) -> None:
    """Log the valid submissions that live logging missed (failed, or another process)."""
    logged = live.logged | _logged_steps(live)
    for sub in record.submissions:
        if not sub.valid or sub.submission_id in logged:
            continue
        metrics = mapping.submission_metrics(sub.score, sub.elapsed_s, sub.metrics)
        _log_metrics(live, metrics, step=sub.submission_id, timestamp=mapping.millis(sub.time))
        live.logged.add(sub.submission_id)


def _logged_steps(live: LiveRun) -> set[int]:
    history = live.client.get_metric_history(live.mlflow_run_id, mapping.SUBMISSION_SCORE)
    return {m.step for m in history}


def _log_params(live: LiveRun, params: Mapping[str, str], existing: Mapping[str, str]) -> None:
    """Params are write-once in MLflow: only the keys it does not hold yet."""
    fresh = [Param(k, v) for k, v in params.items() if k not in existing]
    for chunk in _chunks(fresh, BATCH_PARAMS):
        live.client.log_batch(live.mlflow_run_id, params=chunk)


def _log_tags(live: LiveRun, tags: Mapping[str, str]) -> None:
    for chunk in _chunks([RunTag(k, v) for k, v in tags.items()], BATCH_PARAMS):
        live.client.log_batch(live.mlflow_run_id, tags=chunk)


def _log_metrics(
    live: LiveRun, metrics: Mapping[str, float], step: int, timestamp: int | None
) -> None:
    when = timestamp or _now()
    batch = [Metric(k, v, when, step) for k, v in metrics.items()]
    for chunk in _chunks(batch, BATCH_METRICS):
        live.client.log_batch(live.mlflow_run_id, metrics=chunk)


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _autorl_version() -> str | None:
    try:
        return version("autorl")
    except PackageNotFoundError:
        return None


def _now() -> int:
    return int(time.time() * 1000)
