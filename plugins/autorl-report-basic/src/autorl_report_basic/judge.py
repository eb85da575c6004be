"""Judge rows of the report: which LLM judged each evaluation, its calls, tokens and cost.

Read from the evaluator metrics the harness recorded (``baseline.json``, ``submissions.jsonl``),
written by LLM-judge evaluators such as ``judge`` (keys ``judge``, ``judge_calls``...). Runs whose
evaluator has no judge get no section.
"""

from __future__ import annotations

from typing import Any

from autorl_records import RunRecord

from autorl.text import markdown_text


def _row(label: str, m: dict[str, Any]) -> str:
    cells = [
        label,
        markdown_text(m.get("judge"), 80),
        str(m.get("judge_calls", 0)),
        str(m.get("judge_cached", 0)),
        str(m.get("judge_replayed", 0)),
        str(m.get("judge_input_tokens", 0)),
        str(m.get("judge_output_tokens", 0)),
        f"{float(m.get('judge_cost_usd') or 0.0):.4f}",
        _pct(m.get("win_rate")),
        _pct(m.get("lc_win_rate")),
    ]
    return "| " + " | ".join(cells) + " |"


def _pct(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}"


def render_judge(record: RunRecord) -> str:
    """A Markdown section, or '' when no evaluation of the run used a judge."""
    evaluations: list[tuple[str, dict[str, Any]]] = []
    if record.baseline is not None and record.baseline.metrics.get("judge"):
        cached = " (cached)" if record.baseline.cached else ""
        evaluations.append((f"baseline{cached}", record.baseline.metrics))
    for s in record.submissions:
        if s.metrics.get("judge"):
            evaluations.append((f"submission {s.submission_id}", s.metrics))
    if not evaluations:
        return ""
    lines = [
        "## Judge\n",
        "| evaluation | judge | calls | from cache | replayed | input tokens | output tokens "
        "| cost (USD) | win rate | LC win rate |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(_row(label, m) for label, m in evaluations),
        "",
        "Calls: requests sent to the judge in that evaluation; from cache: judgments reused from "
        "the judge cache (no call); tokens and cost: what that evaluation spent.",
    ]
    if any(m.get("judge_scripted") for _, m in evaluations):
        lines += [
            "",
            "> **Note:** the judge was **scripted** (no LLM answered; rules from a script), so "
            "these win rates test the pipeline, not answer quality.",
        ]
    return "\n".join(lines) + "\n"
