"""Hook implementations of autorl-observer-mlflow: the three lifecycle observers.

Imported by every ``autorl`` command, so nothing heavy here: without
``AUTORL_MLFLOW_TRACKING_URI`` each hook returns at once, and MLflow is imported (through
:mod:`autorl_observer_mlflow.tracker`) only by a run that logs.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from autorl import hookimpl
from autorl_observer_mlflow.settings import TRACKING_URI, Settings, read_settings

if TYPE_CHECKING:
    from autorl.events import RunEndEvent, RunStartEvent, SubmissionEvent

log = logging.getLogger("autorl_observer_mlflow")
CREDENTIALS = re.compile(r"//[^/@\s]+@")  # user:password@ in a tracking URI
MAX_CAUSE_CHARS = 600


class MlflowLoggingError(RuntimeError):
    """Logging to MLflow failed; the engine writes it to the run's event log as
    ``observer_failed`` and the run goes on."""


@hookimpl
def autorl_on_run_start(event: RunStartEvent) -> None:
    _guarded("run start", event.run_id, lambda tracker, s: tracker.start(s, event))


@hookimpl
def autorl_on_submission(event: SubmissionEvent) -> None:
    _guarded(
        f"submission {event.submission_id}", event.run_id,
        lambda tracker, s: tracker.submission(s, event),
    )  # fmt: skip


@hookimpl
def autorl_on_run_end(event: RunEndEvent) -> None:
    _guarded("run end", event.run_id, lambda tracker, s: tracker.end(s, event))


def _guarded(moment: str, run_id: str, action: Callable[[object, Settings], None]) -> None:
    """Run ``action`` when logging is on; a failure stops live logging of this run (its end
    tries once more, whole), is printed as a warning and raised for the run's event log."""
    settings = read_settings()
    if settings is None:
        return
    tracker = None
    try:
        from autorl_observer_mlflow import tracker

        action(tracker, settings)
    except Exception as exc:
        if tracker is not None:
            tracker.defer(run_id)
        message = describe_failure(moment, run_id, settings, exc)
        log.warning("warning: %s", message)
        raise MlflowLoggingError(message) from exc


def describe_failure(moment: str, run_id: str, settings: Settings, exc: Exception) -> str:
    """One readable line: what failed, where, and how to fix it (no credentials, no traceback)."""
    uri = CREDENTIALS.sub("//***@", settings.tracking_uri)
    cause = " ".join(f"{type(exc).__name__}: {exc}".split())
    if len(cause) > MAX_CAUSE_CHARS:
        cause = cause[:MAX_CAUSE_CHARS] + "..."
    return (
        f"MLflow logging of run {run_id!r} ({moment}) to {uri} failed, the run goes on: {cause}. "
        f"Check {TRACKING_URI} (for example sqlite:////abs/path/mlflow.db; "
        "see docs/observers/mlflow.md)"
    )
