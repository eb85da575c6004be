"""The ``analysis`` report: analysis.json, report.html, the trajectory export, and the
analysis's columns and sections in the ``basic`` report's summary.json and report.md.

Run it after ``basic`` (the default order): it adds to their files when they are there and
writes its own either way. Re-rendering is idempotent: the report.md sections sit between
markers and are replaced, summary.json keys are overwritten.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from autorl_analysis.model import Analysis, to_dict

TOP = "<!-- autorl-analysis:flags -->"
TOP_END = "<!-- /autorl-analysis:flags -->"
BODY = "<!-- autorl-analysis:sections -->"
BODY_END = "<!-- /autorl-analysis:sections -->"
FILES = ("analysis.json", "report.html", "timeline.png", "trajectory.openai.jsonl")


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


class AnalysisReport:
    """Writes the analysis files into ``out_dir`` and extends summary.json / report.md."""

    name = "analysis"

    def render(self, run_dir: Path, out_dir: Path) -> list[Path]:
        from autorl_analysis.analyse import analyse
        from autorl_analysis.judge import judge_from_config
        from autorl_analysis.plot import timeline_png
        from autorl_analysis.trajectory import export_rows
        from autorl_analysis.views import flags_md, render_html, sections_md

        run_dir, out_dir = Path(run_dir), Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        analysis, reader = analyse(run_dir)
        judged = judge_from_config(reader, analysis)  # None unless AUTORL_ANALYSIS_JUDGE is set
        if judged is not None:
            analysis = _with_judge(analysis, judged)
        written = [
            _write(
                out_dir / "analysis.json",
                json.dumps(to_dict(analysis), indent=2, default=str) + "\n",
            )
        ]
        summary = _extend_summary(out_dir / "summary.json", analysis)
        if summary is None:
            from autorl_records import summary as summarise

            summary = summarise(reader.record)
        record = reader.record
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
        md = out_dir / "report.md"
        if md.is_file():
            _extend_markdown(md, flags_md(analysis), sections_md(analysis))
            written.append(md)
        if (out_dir / "summary.json").is_file():
            written.append(out_dir / "summary.json")
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


def _extend_summary(path: Path, analysis: Analysis) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    data.update(summary_columns(analysis))
    _write(path, json.dumps(data, indent=2, default=str) + "\n")
    return data


def _extend_markdown(path: Path, top: str, body: str) -> None:
    """Flags at the top (under the title and the basic report's own banners, such as NOT
    COMPARABLE, which stay first), the sections at the end; earlier ones are replaced."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(re.escape(TOP) + r".*?" + re.escape(TOP_END) + r"\n\n?", "", text, flags=re.S)
    text = re.sub(re.escape(BODY) + r".*?" + re.escape(BODY_END) + r"\n?", "", text, flags=re.S)
    lines = text.split("\n")
    at = 0
    if lines and lines[0].startswith("# "):
        at = 1
        while at < len(lines) and (not lines[at].strip() or lines[at].startswith(">")):
            at += 1
    block = [TOP, *top.rstrip("\n").split("\n"), TOP_END, ""]
    text = "\n".join(lines[:at] + block + lines[at:])
    text = text.rstrip("\n") + f"\n\n{BODY}\n{body}{BODY_END}\n"
    _write(path, text)


def _write(path: Path, text: str) -> Path:
    """Atomic: a reader (or a crash) never sees half a file."""
    return _write_bytes(path, text.encode("utf-8"))


def _write_bytes(path: Path, data: bytes) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path
