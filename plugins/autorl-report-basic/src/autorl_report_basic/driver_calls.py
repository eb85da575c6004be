"""The report's ``## Driver calls`` section: calls, tokens, cost and latency, as the run
record's summary gives them (``autorl_records.logs`` reads the gateway's call log)."""

from __future__ import annotations

from typing import Any

from autorl.text import markdown_text

CALL_LOG = "driver_calls.jsonl"
MAX_ROWS = 50


def render_driver_calls(d: dict[str, Any]) -> str:
    """The ``## Driver calls`` section ('' for runs without a driver)."""
    s = d.get("driver_calls")
    if not s:
        return ""
    budget = s.get("budget") or {}
    limits = [
        f"{budget['max_tokens']} tokens" if budget.get("max_tokens") else "",
        f"${budget['max_cost_usd']}" if budget.get("max_cost_usd") else "",
    ]
    limit_text = " and ".join(x for x in limits if x) or "none"
    lines = [
        "## Driver calls\n",
        f"{s['calls']} answered calls through the LLM gateway "
        f"({s['errors']} failed, {s.get('refused', 0)} refused), "
        f"{s['input_tokens']} input + {s['output_tokens']} output = "
        f"**{s['total_tokens']} tokens**, cost **${s['cost_usd']:.4f}**; "
        f"driver budget: {limit_text}.",
    ]
    if budget.get("exhausted"):
        lines.append(
            f"\nThe driver budget ran out ({budget['exhausted'].replace('_', ' ')}); "
            f"{s['refused']} later calls were refused."
        )
    if s["errors"] or s.get("retries"):
        lines.append(_health_text(s))
    if s.get("scripted"):
        lines.append("\nThe driver was scripted: token counts are estimates and no LLM answered.")
    lines += [
        "",
        "| # | api | in tokens | out tokens | cost $ | latency | tools called | error |",
        "|---:|---|---:|---:|---:|---:|---|---|",
    ]
    for r in s["rows"][:MAX_ROWS]:
        latency = f"{r['latency_s']:.2f} s" if isinstance(r.get("latency_s"), int | float) else "-"
        lines.append(
            f"| {r['n']} | {markdown_text(r['api'], 40)} | {r['input_tokens']} | "
            f"{r['output_tokens']} | {r['cost_usd']:.4f} | {latency} | "
            f"{markdown_text(', '.join(map(str, r['tool_calls'])), 200)} | "
            f"{markdown_text(r['error'], 80) if r['error'] else ''} |"
        )
    if len(s["rows"]) > MAX_ROWS:
        lines.append(f"\n{len(s['rows']) - MAX_ROWS} more calls in `{CALL_LOG}` (summary.json).")
    lines += [f"- {markdown_text(p, 300)}" for p in s.get("problems") or []]
    return "\n".join(lines) + "\n"


def _health_text(s: dict[str, Any]) -> str:
    """Upstream trouble in words: retries the driver absorbed, failed calls, a final outage."""
    parts = []
    if s.get("retries"):
        parts.append(
            f"the driver retried {s['retried_calls']} call(s) ({s['retries']} extra attempts)"
        )
    if s["errors"]:
        parts.append(f"{s['errors']} call(s) failed; last error: {_one_line(s['last_error'])}")
    text = "\n**Upstream health**: " + "; ".join(parts) + "."
    health = s.get("health") or {}
    if health.get("down"):
        text += (
            f" The upstream was **down when the agent stopped** "
            f"({health.get('consecutive_failures')} failed call(s) in a row)."
        )
    return text


def _one_line(text: str | None, limit: int = 300) -> str:
    """An upstream error message: it can echo what the agent sent, so it is escaped."""
    return markdown_text(text, limit)
