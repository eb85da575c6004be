"""The `basic` report: everything a reader needs to judge one run, from the harness's records."""

from __future__ import annotations

import json
import os
from pathlib import Path

from autorl_records import load_run, summary

from autorl_report_basic.markdown import render_markdown
from autorl_report_basic.plot import plot_score_over_time


class BasicReport:
    """Writes ``summary.json``, ``report.md`` and ``score_over_time.png`` into ``out_dir``.

    It renders the run record (``autorl_records``: the harness's own files and the plugins'
    contributions), so re-rendering a finished run gives the same numbers the run printed,
    nothing the agent wrote can change them, and ``summary.json`` is the record's summary.
    """

    name = "basic"

    def render(self, run_dir: Path, out_dir: Path) -> list[Path]:
        record = load_run(Path(run_dir))
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        data = summary(record)
        summary_path = _write_text(
            out_dir / "summary.json", json.dumps(data, indent=2, default=str) + "\n"
        )
        plot_path = plot_score_over_time(record, data, out_dir / "score_over_time.png")
        report_path = _write_text(
            out_dir / "report.md", render_markdown(record, data, plot_name=plot_path.name)
        )
        return [summary_path, report_path, plot_path]


def _write_text(path: Path, text: str) -> Path:
    """Atomic write: a reader (or a crash) never sees half a report."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
