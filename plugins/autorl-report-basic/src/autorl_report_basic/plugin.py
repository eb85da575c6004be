"""Entry point: registers the `basic` report (no heavy imports here)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import ReportSpec


@hookimpl
def autorl_register_reports() -> list[ReportSpec]:
    return [
        ReportSpec(
            name="basic",
            factory="autorl_report_basic.report:BasicReport",
            description="summary.json, report.md and score_over_time.png from the harness records",
            options={"files": ["summary.json", "report.md", "score_over_time.png"]},
        )
    ]
