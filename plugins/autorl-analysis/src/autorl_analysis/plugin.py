"""Entry point of autorl-analysis (no heavy imports here: every `autorl` command imports it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from autorl import hookimpl
from autorl.specs import ReportSpec

if TYPE_CHECKING:
    from autorl.events import RecordContribution, RunEndEvent


@hookimpl
def autorl_on_run_end(event: RunEndEvent) -> None:
    """The run's reports are written: drop the analysis kept for them (its reader holds the
    run's logs), whether or not the ``analysis`` report was among them."""
    from autorl_analysis.report import forget

    forget(event.run_dir)


@hookimpl
def autorl_contribute_to_record(event: RunEndEvent) -> RecordContribution | None:
    """The analysis's part of every run's record (flags, routes, failures, the judge)."""
    from autorl_analysis.report import contribution

    return contribution(event)


@hookimpl
def autorl_register_reports() -> list[ReportSpec]:
    return [
        ReportSpec(
            name="analysis",
            factory="autorl_analysis.report:AnalysisReport",
            description="post-hoc analysis: routes, failures, timeline, integrity flags; "
            "analysis.json, report.html, trajectory.openai.jsonl (its results are in every "
            "run's record whichever reports it renders)",
            options={
                "files": [
                    "analysis.json",
                    "report.html",
                    "timeline.png",
                    "trajectory.openai.jsonl",
                ]
            },
        )
    ]
