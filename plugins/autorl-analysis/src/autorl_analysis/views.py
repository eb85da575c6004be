"""The analysis as Markdown sections (for report.md) and as one self-contained HTML page.

Every string that came from a record (paths, commands, log lines: agent-written, hostile) is
made inert and bounded (:func:`autorl.text.sanitize`) and then escaped for its sink: Markdown
and HTML for report.md (:func:`autorl.text.markdown_text`), HTML for report.html. The page holds
no script and loads nothing: plots are inline base64 PNGs. Every route, failure and timeline
entry shows its basis: ``claimed`` (read from the agent's text) or ``observed`` (measured or
recorded by the harness).
"""

from __future__ import annotations

import base64
import html
import re
from typing import Any

from autorl.text import markdown_text, sanitize
from autorl_analysis.model import Analysis, Evidence, Flag, Route

MAX_ROWS = 200
SEVERITY_CLASS = {"violation": "critical", "suspicious": "warning"}


def _md(text: Any, limit: int = 300) -> str:
    """One table cell or inline text: inert, HTML and Markdown escaped, bounded."""
    return markdown_text(text, limit)


def _evidence_md(items: tuple[Evidence, ...], limit: int = 3) -> str:
    """No code spans: a backslash escape does not work inside one, so a backtick in an
    agent-chosen path could close it."""
    return "; ".join(
        f"{_md(e.source, 160)}{':' + str(int(e.line)) if e.line else ''}: {_md(e.text)}"
        for e in items[:limit]
    )


def _kind(kind: str) -> str:
    """A flag's kind in a code span when it is a plain name (they all are; escaped otherwise)."""
    return f"`{kind}`" if re.fullmatch(r"[A-Za-z0-9_:.-]{1,80}", kind) else _md(kind, 80)


def _route_text(route: Route | None, basis: bool = True) -> str:
    if route is None:
        return "-"
    methods = ", ".join(route.methods)
    text = f"{route.label}" + (f" ({methods})" if methods else "")
    return text + (f" [{route.basis}]" if basis and route.label not in ("none",) else "")


def flags_md(analysis: Analysis) -> str:
    """The block that goes at the top of report.md."""
    if not analysis.flags:
        return "> **Integrity:** no flags raised by the post-hoc analysis (see analysis.json).\n"
    lines = [f"> **INTEGRITY FLAGS ({len(analysis.flags)})** - post-hoc analysis, see below:"]
    for f in analysis.flags:
        sub = f" (submission {f.submission_id})" if f.submission_id is not None else ""
        lines.append(f"> - **{f.severity}** {_kind(f.kind)}{sub}: {_md(f.message, 500)}")
    return "\n".join(lines) + "\n"


OVERHEAD_LABELS = {
    "setup": "setup: prepare task and model, baseline",
    "sandbox_start": "sandbox start",
    "agent": "agent phase",
    "evaluation_after_agent": "evaluations after the agent",
    "sealed_evaluation": "evaluations on the sealed test split",
    "report": "reports",
    "harness": "harness (total less the agent)",
    "total": "total",
    "evaluation": "all evaluations of submissions (partly beside the agent)",
}


def sections_md(analysis: Analysis) -> str:
    """The analysis sections appended to report.md."""
    out = ["## Analysis\n"]
    out.append(
        f"Route of the run: **{_route_text(analysis.route)}**; of the best submission: "
        f"**{_route_text(analysis.best_route)}**.\n"
    )
    out.append(
        "*claimed*: read from what the agent wrote (agent.log, its trajectory, its code), "
        "which it could forge; *observed*: measured or recorded by the harness (weights against "
        "the base, the gateway's call log, events.jsonl, submissions.jsonl). A claim that an "
        "observation contradicts is the flag `claim_contradicted`.\n"
    )
    if analysis.submissions:
        out += [
            "| submission | status | score | route | failure | evidence |",
            "|---:|---|---:|---|---|---|",
        ]
        for s in analysis.submissions:
            failure = f"{s.failure.type} {s.failure.detail}".strip() if s.failure else "-"
            score = "-" if s.score is None else f"{s.score:g}"
            out.append(
                f"| {s.submission_id} | {s.status} | {score} | {_route_text(s.route)} | "
                f"{_md(failure)} | {_evidence_md(s.route.evidence, 2)} |"
            )
        out.append("")
    out.append("### Failures\n")
    if analysis.failures:
        out += [
            f"- **{f.type}**{' (' + _md(f.detail) + ')' if f.detail else ''} [{f.basis}]: "
            f"{_md(f.message)}" + (f" - {_evidence_md(f.evidence, 2)}" if f.evidence else "")
            for f in analysis.failures
        ]
    else:
        out.append("None found.")
    out.append("\n### Integrity flags\n")
    if analysis.flags:
        for f in analysis.flags:
            value = (
                f" (value {f.value:g}, threshold {f.threshold:g})"
                if f.value is not None and f.threshold is not None
                else ""
            )
            out.append(f"- **{f.severity}** {_kind(f.kind)}: {_md(f.message, 500)}{value}")
            out += [f"  - {_evidence_md((e,), 1)}" for e in f.evidence[:5]]
    else:
        out.append("None.")
    change = analysis.measurements.get("weight_change") or {}
    if change:
        out += [
            "\n### Observed weight change\n",
            "| submission | relative L2 to the base | tensors changed | largest changes | source |",
            "|---:|---:|---:|---|---|",
        ]
        for sid, c in change.items():
            changed = (
                f"{c['tensors_changed']} of {c['tensors']}" if c.get("tensors") is not None else "-"
            )
            top = ", ".join(
                f"{_md(t['tensor'], 80)} {t['relative']:.2e}"
                for t in c.get("largest_changes", [])[:3]
            )
            out.append(
                f"| {_md(sid, 12)} | {c['distance']:.3e} | {changed} | {top or '-'} | "
                f"{_md(c['source'], 80)} |"
            )
    leak = analysis.measurements.get("leakage") or {}
    if leak:
        out.append(
            f"\nLeakage check: {leak.get('leaked_examples')} of {leak.get('eval_examples')} "
            f"held-out examples share >= {leak.get('hit_fraction', 0):.0%} of their "
            f"{leak.get('ngram')}-grams with the agent's files (rate {leak.get('rate')}; train "
            f"split {leak.get('train_rate')}; threshold {leak.get('threshold')})."
        )
    if analysis.overhead:
        out.append("\n### Where the wall time went\n")
        out += ["| phase | seconds | share |", "|---|---:|---:|"]
        total = analysis.overhead.get("total") or 0.0
        for key, label in OVERHEAD_LABELS.items():
            value = analysis.overhead.get(key)
            if value is not None:
                share = f"{value / total:.0%}" if total > 0 and key != "evaluation" else ""
                out.append(f"| {label} | {value:.1f} | {share} |")
    out.append("\n### Timeline\n")
    out += ["| t (s) | what | basis | detail |", "|---:|---|---|---|"]
    for e in analysis.timeline[:MAX_ROWS]:
        out.append(f"| {e.t:.1f} | {_md(e.kind, 40)} | {e.basis} | {_md(e.label)} |")
    if analysis.judge is not None:
        out.append("\n" + judge_md(analysis.judge))
    if analysis.problems:
        out.append("\n### Analysis problems\n")
        out += [f"- {_md(p)}" for p in analysis.problems]
    return "\n".join(out) + "\n"


def judge_md(judge: dict[str, Any]) -> str:
    """The LLM judge's verdicts (its flags are also in the flags block at the top)."""
    how = "replayed from a cassette" if judge.get("replayed") else "live"
    if judge.get("scripted"):
        how += ", scripted (no LLM)"
    out = [f"### LLM judge\n\n`{_md(judge.get('model') or judge.get('driver'))}` ({how})."]
    if judge.get("summary"):
        out.append(f"\n{_md(judge['summary'])}")
    if judge.get("verdicts"):
        out += ["", "| category | verdict | confidence | reason |", "|---|---|---:|---|"]
        out += [
            f"| {_md(v['category'])} | {_md(v['verdict'])} | {v['confidence']:.2f} | "
            f"{_md(v['reason'])} |"
            for v in judge["verdicts"]
        ]
    else:
        out.append("\nNo verdicts (see the judge's problems under *Analysis problems*).")
    return "\n".join(out) + "\n"


# HTML ---------------------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:1em 0;font-size:.9em;width:100%}
th,td{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3} .critical{background:#fde2e2} .warning{background:#fff4d6}
.ok{background:#e5f6e5;padding:.6em 1em} .flags{padding:.6em 1em;border:2px solid #c33}
code{font-size:.85em;word-break:break-all} img{max-width:100%}
"""


def _e(text: Any, limit: int = 2000) -> str:
    """Text for the page: inert (no control characters), bounded, HTML-escaped."""
    return html.escape(sanitize(text, limit))


def _evidence_html(items: tuple[Evidence, ...], limit: int = 4) -> str:
    return "<br>".join(
        f"<code>{_e(e.source, 300)}{':' + str(int(e.line)) if e.line else ''}</code> "
        f"{_e(e.text, 300)}"
        for e in items[:limit]
    )


def _table(
    head: list[str], rows: list[list[str]], classes: list[str] | None = None, id_: str = ""
) -> str:
    cells = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = []
    for i, row in enumerate(rows[:MAX_ROWS]):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    ident = f' id="{id_}"' if id_ else ""
    return f"<table{ident}><thead><tr>{cells}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _flags_html(flags: tuple[Flag, ...]) -> str:
    if not flags:
        return '<p class="ok" id="flags">No integrity flags.</p>'
    rows = [
        [
            _e(f.severity),
            f"<code>{_e(f.kind)}</code>",
            "-" if f.submission_id is None else str(f.submission_id),
            _e(f.message),
            _evidence_html(f.evidence),
        ]
        for f in flags
    ]
    table = _table(
        ["severity", "flag", "submission", "finding", "evidence"],
        rows,
        [f.severity for f in flags],
        "flag-table",
    )
    return f'<div class="flags" id="flags"><h2>Integrity flags ({len(flags)})</h2>{table}</div>'


def render_html(
    analysis: Analysis, summary: dict[str, Any], plot_png: bytes, driver_calls: list[dict[str, Any]]
) -> str:
    """The whole page."""
    a = analysis
    image = base64.b64encode(plot_png).decode("ascii")
    head = [
        ("task", summary.get("task")),
        ("agent", summary.get("agent")),
        ("driver", summary.get("driver") or "-"),
        ("model", summary.get("model")),
        ("status", summary.get("status")),
        ("end reason", summary.get("end_reason")),
        ("baseline", summary.get("baseline_score")),
        ("best", summary.get("best_score")),
        ("route of the run", _route_text(a.route)),
        ("route of the best submission", _route_text(a.best_route)),
    ]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<link rel='icon' href='data:,'>",
        f"<title>autorl analysis: {_e(a.run_id)}</title><style>{CSS}</style></head><body>",
        f"<h1>autorl run <code>{_e(a.run_id)}</code></h1>",
        _flags_html(a.flags),
        _table(["", ""], [[_e(k), _e(v)] for k, v in head]),
        "<h2 id='timeline'>Timeline</h2>",
        f"<img id='timeline-plot' alt='timeline' src='data:image/png;base64,{image}'>",
        _table(
            ["t (s)", "what", "basis", "detail"],
            [[f"{e.t:.1f}", _e(e.kind), _e(e.basis), _e(e.label)] for e in a.timeline],
            id_="timeline-table",
        ),
        "<h2 id='submissions'>Submissions and routes</h2>",
        _table(
            ["id", "status", "score", "t (s)", "route", "failure", "evidence"],
            [
                [
                    str(s.submission_id),
                    _e(s.status),
                    "-" if s.score is None else f"{s.score:g}",
                    "-" if s.elapsed_s is None else f"{s.elapsed_s:.1f}",
                    _e(_route_text(s.route)),
                    _e(f"{s.failure.type} {s.failure.detail}".strip()) if s.failure else "-",
                    _evidence_html(s.route.evidence),
                ]
                for s in a.submissions
            ],
            id_="submission-table",
        ),
        "<h2 id='failures'>Failures</h2>",
        _table(
            ["type", "detail", "basis", "message", "evidence"],
            [
                [_e(f.type), _e(f.detail), _e(f.basis), _e(f.message), _evidence_html(f.evidence)]
                for f in a.failures
            ],
        )
        if a.failures
        else "<p>None found.</p>",
        "<h2 id='driver-calls'>Driver calls</h2>",
        _table(
            ["#", "time", "driver", "input tokens", "output tokens", "cost (USD)", "error"],
            [
                [
                    str(i),
                    _e(c.get("ts", "")),
                    _e(c.get("driver", "")),
                    _e((c.get("usage") or {}).get("input_tokens", 0)),
                    _e((c.get("usage") or {}).get("output_tokens", 0)),
                    _e(c.get("cost_usd", 0)),
                    _e((c.get("error") or {}).get("type", "")),
                ]
                for i, c in enumerate(driver_calls, 1)
            ],
            id_="driver-call-table",
        )
        if driver_calls
        else "<p>No driver calls (no LLM drove this run).</p>",
    ]
    if a.judge is not None:
        verdicts = a.judge.get("verdicts") or []
        how = "replayed from a cassette" if a.judge.get("replayed") else "live"
        parts += [
            "<h2 id='judge'>LLM judge</h2>",
            f"<p><code>{_e(a.judge.get('model') or a.judge.get('driver'))}</code> ({_e(how)}). "
            f"{_e(a.judge.get('summary') or '')}</p>",
            _table(
                ["category", "verdict", "confidence", "reason", "evidence (quoted by the judge)"],
                [
                    [
                        _e(v.get("category")),
                        _e(v.get("verdict")),
                        f"{float(v.get('confidence') or 0):.2f}",
                        _e(v.get("reason", "")),
                        "<br>".join(_e(q) for q in v.get("evidence") or []),
                    ]
                    for v in verdicts
                ],
                [SEVERITY_CLASS.get(str(v.get("verdict")), "") for v in verdicts],
                "judge-table",
            )
            if verdicts
            else "<p>No verdicts (see the analysis problems).</p>",
        ]
    if a.problems:
        parts.append("<h2>Analysis problems</h2><ul>")
        parts += [f"<li>{_e(p)}</li>" for p in a.problems]
        parts.append("</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
