"""A run read back from the harness's own records (see the distribution's README)."""

from autorl_records.records import (
    SUMMARY_SCHEMA_VERSION,
    Baseline,
    RunInfo,
    RunRecord,
    SubmissionRecord,
    comparable,
    load_run,
    noise,
    process_metrics,
    sandbox_of,
    summary,
    trust_problems,
)

__all__ = [
    "SUMMARY_SCHEMA_VERSION",
    "Baseline",
    "RunInfo",
    "RunRecord",
    "SubmissionRecord",
    "comparable",
    "load_run",
    "noise",
    "process_metrics",
    "sandbox_of",
    "summary",
    "trust_problems",
]
