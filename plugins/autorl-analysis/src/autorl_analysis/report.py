"""The analysis's part of the run record, and the ``analysis`` report that renders it.

:func:`contribution` (the ``autorl_contribute_to_record`` hook) analyses the run once it ended
and hands the engine its columns (``flagged``, ``best_route``... in summary.json, results and
campaigns), its full result (``analysis.json``'s content) and its Markdown sections (which the
``basic`` report shows): whichever reports a run renders, the record holds the analysis. The
``analysis`` report writes only its own files (analysis.json, report.html, timeline.png,
trajectory.openai.jsonl), from the same analysis; it never touches another report's files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from autorl.events import RecordContribution, RunEndEvent
from autorl_analysis.model import Analysis, to_dict

FILES = ("analysis.json", "report.html", "timeline.png", "trajectory.openai.jsonl")
NAME = "analysis"
_LAST: dict[Path, tuple[Any, ...]] = {}
"""The analysis this process made of a run for its contribution, which the report renders in
the same process (a run's end, ``autorl report``) instead of analysing (and judging) again."""


def summary_columns(analysis: Analysis) -> dict[str, Any]:
    """What summary.json (and so results.jsonl) carries of the analysis."""
    return {
        "route": analysis.route.label if analysis.route else None,
        "best_route": analysis.best_route.label if analysis.best_route else None,
        "flagged": analysis.flagged,
        "flags": [
            {"kind": f.kind, "severity": f.severity, "submission_id": f.submission_id}
            for f in analysis.flags
        ],
        "failure_types": sorted({f.type for f in analysis.failures}),
        "judge": _judge_column(analysis.judge),
    }


def _judge_column(judge: dict[str, Any] | None) -> dict[str, Any] | None:
    """The judge in one cell: who judged, its verdict per category, how many problems."""
    if judge is None:
        return None
    return {
        "driver": judge.get("driver"),
        "verdicts": {v["category"]: v["verdict"] for v in judge.get("verdicts") or []},
        "problems": len(judge.get("problems") or []),
    }


def _analysed(run_dir: Path) -> tuple[Analysis, Any]:
    """The run's analysis with the judge's verdict when one is configured (and its reader)."""
    from autorl_analysis.analyse import analyse
    from autorl_analysis.judge import judge_from_config

    analysis, reader = analyse(run_dir)
    judged = judge_from_config(reader, analysis)  # None unless AUTORL_ANALYSIS_JUDGE is set
    if judged is not None:
        analysis = _with_judge(analysis, judged)
    return analysis, reader


def forget(run_dir: Path) -> None:
    """Drop the analysis kept for ``run_dir``'s report (:data:`_LAST`)."""
    _LAST.pop(Path(run_dir).resolve(), None)


def contribution(event: RunEndEvent) -> RecordContribution:
    """The analysis's part of the run record."""
    from autorl_analysis.views import flags_md, sections_md

    run_dir = Path(event.run_dir).resolve()
    analysis, reader = _analysed(run_dir)
    _LAST.clear()
    _LAST[run_dir] = (analysis, reader)
    return RecordContribution(
        name=NAME,
        data=to_dict(analysis),
        summary=summary_columns(analysis),
        banner_md=flags_md(analysis),
        sections_md=sections_md(analysis),
    )


class AnalysisReport:
    """Writes the analysis's own files into ``out_dir``."""

    name = NAME

    def render(self, run_dir: Path, out_dir: Path) -> list[Path]:
        from autorl_records import summary as summarise

        from autorl_analysis.plot import timeline_png
        from autorl_analysis.trajectory import export_rows
        from autorl_analysis.views import render_html

        run_dir, out_dir = Path(run_dir).resolve(), Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        analysis, reader = _LAST.pop(run_dir, None) or _analysed(run_dir)
        written = [
            _write(
                out_dir / "analysis.json",
                json.dumps(to_dict(analysis), indent=2, default=str) + "\n",
            )
        ]
        record = reader.record
        summary = {**summarise(record), **summary_columns(analysis)}
        base = record.baseline.score if record.baseline is not None else None
        png = timeline_png(analysis, base, record.budget_seconds, record.run_id)
        written.append(_write_bytes(out_dir / "timeline.png", png))
        page = render_html(analysis, summary, png, reader.calls)
        written.append(_write(out_dir / "report.html", page))
        problems: list[str] = []
        rows = export_rows(run_dir, problems, reader.trajectory_file)
        if rows:
            text = "".join(json.dumps(r, default=str) + "\n" for r in rows)
            written.append(_write(out_dir / "trajectory.openai.jsonl", text))
        return written


def _with_judge(analysis: Analysis, judged: dict[str, Any]) -> Analysis:
    """The judge's result in ``judge``, its flags among the others (critical first), its
    problems among the analysis's."""
    import dataclasses

    from autorl_analysis.judge import verdict_flags

    flags = sorted(
        (*analysis.flags, *verdict_flags(judged)),
        key=lambda f: ("critical", "warning", "info").index(f.severity),
    )
    problems = (*analysis.problems, *(f"judge: {p}" for p in judged.get("problems") or []))
    return dataclasses.replace(analysis, judge=judged, flags=tuple(flags), problems=problems)


def _write(path: Path, text: str) -> Path:
    """Atomic: a reader (or a crash) never sees half a file."""
    return _write_bytes(path, text.encode("utf-8"))


def _write_bytes(path: Path, data: bytes) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path
