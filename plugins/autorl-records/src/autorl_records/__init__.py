"""The run record: the one reader of a run directory (see the distribution's README and
docs/architecture.md). Names are imported on first use, so that ``autorl runs`` and
``autorl report`` start without the typed record's pydantic models until a run is read."""

from __future__ import annotations

import importlib
from typing import Any

_FROM = {
    "logs": ("CallRow", "call_rows", "driver_call_summary", "posix_time", "read_calls", "read_log"),
    "records": (
        "INFRA_ERROR",
        "PROTOCOLS",
        "RECORD_VERSION",
        "SUMMARY_SCHEMA_VERSION",
        "Baseline",
        "Contribution",
        "RunInfo",
        "RunRecord",
        "SubmissionRecord",
        "comparable",
        "engine_of",
        "infra_cause",
        "load_run",
        "noise",
        "precision_of",
        "process_metrics",
        "protocol_of",
        "sandbox_of",
        "scoring",
        "summary",
        "trust_problems",
    ),
}
_MODULE = {name: module for module, names in _FROM.items() for name in names}
__all__ = sorted(_MODULE)


def __getattr__(name: str) -> Any:
    module = _MODULE.get(name)
    if module is None:
        raise AttributeError(f"module 'autorl_records' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"autorl_records.{module}"), name)
    globals()[name] = value
    return value
