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
    run_id: str
    run_dir: Path
    summary: Mapping[str, Any] = field(default_factory=dict)
