"""Driver-call rows of the report: calls, tokens, cost and latency, from the harness's call log.

The log (``driver_calls.jsonl``) is written by the run's LLM gateway, outside the workspace, so
these numbers are the harness's own; ``run.json`` adds the driver budget and whether it ran out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autorl.text import markdown_text

CALL_LOG = "driver_calls.jsonl"
MAX_ROWS = 50


def _row(n: int, r: dict[str, Any]) -> dict[str, Any]:
    usage = r.get("usage") or {}
    response = r.get("response") or {}
    meta = (r.get("request") or {}).get("metadata") or {}
    return {
        "n": n,
        "ts": r.get("ts"),
        "api": meta.get("api"),
        "streamed": bool(r.get("streamed")),
        "input_tokens": int(usage.get("input_tokens", 0)),
        "output_tokens": int(usage.get("output_tokens", 0)),
        "cost_usd": float(r.get("cost_usd") or 0.0),
        "latency_s": r.get("latency_s"),
        "tool_calls": [c.get("name") for c in response.get("tool_calls") or []],
        "error": (r.get("error") or {}).get("type"),
        "error_message": (r.get("error") or {}).get("message"),
        "refused": bool(r.get("refused")),
        "attempts": int(r.get("attempts") or (0 if r.get("refused") else 1)),
    }


def driver_call_summary(run_dir: Path) -> dict[str, Any] | None:
    """Totals and one row per call; None when the run had no driver (no call log)."""
    path = Path(run_dir) / CALL_LOG
    if not path.is_file():
        return None
    records, rows, problems = [], [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            rows.append(_row(len(rows) + 1, record))
            records.append(record)
        except (json.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
            problems.append(f"{CALL_LOG}:{n}: unreadable ({exc})")
    ok = [r for r in rows if r["error"] is None]
    refused = [r for r in rows if r["refused"] or r["error"] == "BudgetRefused"]
    failed = [r for r in rows if r["error"] is not None and r not in refused]
    run_info = _run_json(Path(run_dir))
    return {
        "driver": next((r.get("driver") for r in records), None),
        "calls": len(ok),
        "errors": len(failed),
        "refused": len(refused),
        "retried_calls": sum(1 for r in rows if r["attempts"] > 1),
        "retries": sum(max(0, r["attempts"] - 1) for r in rows),
        "last_error": failed[-1]["error_message"] if failed else None,
        "input_tokens": sum(r["input_tokens"] for r in ok),
        "output_tokens": sum(r["output_tokens"] for r in ok),
        "total_tokens": sum(r["input_tokens"] + r["output_tokens"] for r in ok),
        "cost_usd": round(sum(r["cost_usd"] for r in ok), 6),
        "scripted": any(r.get("scripted") for r in records),
        "budget": run_info.get("driver_usage"),
        "health": run_info.get("driver_health"),
        "rows": rows,
        "problems": problems,
    }


def _run_json(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


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
