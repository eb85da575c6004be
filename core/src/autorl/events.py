"""Lifecycle events handed to observer hooks: one frozen object each, so fields can be added."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RunStartEvent:
    run_id: str
    run_dir: Path
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SubmissionEvent:
    """A submission changed status (``received``, ``evaluating``, ``scored``, ``failed``...)."""

    run_id: str
    submission_id: int
    status: str
    score: float | None = None
    reason: str | None = None
    record: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunEndEvent:
    """The run ended: its record is complete (``run.json``, the contributions, the reports).
    Read it with ``autorl_records.load_run(event.run_dir)``: the one reader of a run."""

    run_id: str
    run_dir: Path


@dataclass(frozen=True)
class RecordContribution:
    """A plugin's results about a finished run, kept in the run record under ``name``
    (``contributions/<name>.json``, harness-owned) so that every report renders them and the
    campaign, ``runs list`` and trackers read them, whichever reports a run renders.

    ``summary`` holds the columns the plugin adds to ``summary.json`` (and so to results and
    campaigns: flat JSON values); ``data`` its full result (JSON); ``banner_md`` and
    ``sections_md`` the Markdown a report shows at the top and at the end of a run's page."""

    name: str
    data: Mapping[str, Any] = field(default_factory=dict)
    summary: Mapping[str, Any] = field(default_factory=dict)
    banner_md: str = ""
    sections_md: str = ""
