"""Entry point of autorl-analysis (no heavy imports here: every `autorl` command imports it)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import ReportSpec


@hookimpl
def autorl_register_reports() -> list[ReportSpec]:
    return [
        ReportSpec(
            name="analysis",
            factory="autorl_analysis.report:AnalysisReport",
            description="post-hoc analysis: routes, failures, timeline, integrity flags; "
            "analysis.json, report.html, trajectory.openai.jsonl (run after basic)",
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
