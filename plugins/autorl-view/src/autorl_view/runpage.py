"""One run's page as data: its result, flags, transcript and submissions with their code diffs.

Everything comes from the run record (:mod:`autorl_records`) and the analysis's contribution;
code diffs from ``code-history.git`` through the analysis's :class:`CodeHistory` (git with
hooks, filters and config disabled); ``agent.log`` through its capped, link-refusing reader.
Nothing here is rendered: the templates escape every string (it is agent-written or could be).
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from autorl_records import (
    RunRecord,
    load_run,
    posix_time,
    read_calls,
    read_log,
    scoring,
    summary,
)

MAX_TRANSCRIPT_ITEMS = 2_000
"""Transcript entries shown (the rest is counted, not rendered)."""
MAX_TEXT = 20_000
"""Characters of one message, tool result or log excerpt shown."""
MAX_DIFF_LINES = 2_000
MAX_LOG_LINES = 2_000
NO_VALUE = "\N{EN DASH}"
"""What a missing number reads as."""
QUIET_EVENTS = frozenset({"run_created", "manifest_written"})
"""Events whose content the page's header already shows."""


def live(record: RunRecord) -> dict[str, Any]:
    """What the live page polls every 2 s: status, time used against the budget, the
    submissions. Read from run.json and the submissions log only (never the call log, which
    a long run makes large)."""
    run = record.run
    return {
        "status": record.status,
        "agent_seconds": run.agent_seconds if run is not None else None,
        "budget_seconds": record.budget_seconds,
        "score": scoring(record).get("score"),
        "end_reason": run.end_reason if run is not None else None,
        "submissions": [
            {
                "id": s.submission_id,
                "elapsed": duration(s.elapsed_s),
                "status": s.status,
                "reason": _clip(s.reason or "", 500),
                "score": plus_minus(s.score, s.metrics.get("score_se")),
                "weight_hash": _short(s.weight_hash),
            }
            for s in record.submissions
        ],
    }


def run_page(run_dir: Path) -> dict[str, Any]:
    """The context of a run's page."""
    record = load_run(run_dir)
    data = summary(record)
    analysis = record.contributions.get("analysis")
    adata = analysis.data if analysis is not None else {}
    problems: list[str] = list(record.problems)
    routes = {
        s.get("submission_id"): s.get("route") or {}
        for s in adata.get("submissions") or []
        if isinstance(s, dict)
    }
    return {
        "summary": data,
        "live": live(record),
        "running": record.status == "running",
        "flags": [f for f in adata.get("flags") or [] if isinstance(f, dict)],
        "analysed": analysis is not None,
        "route": adata.get("best_route") or adata.get("route"),
        "submissions": _submissions(record, routes, problems),
        "chart": score_chart(record),
        "transcript": _transcript(record, problems),
        "problems": problems,
    }


CHART_W, CHART_H, CHART_PAD = 640, 180, 34


def score_chart(record: RunRecord) -> dict[str, Any] | None:
    """Each scored submission's score over the agent's time, the baseline and the budget, as
    coordinates of a small SVG (numbers only: nothing from the run becomes markup)."""
    points = [
        (float(s.elapsed_s), float(s.score), s.submission_id)
        for s in record.submissions
        if s.score is not None and s.elapsed_s is not None
    ]
    if not points:
        return None
    base = record.baseline.score if record.baseline is not None else None
    scores = [p[1] for p in points] + ([base] if base is not None else [])
    low, high = min(scores), max(scores)
    if high - low < 1e-9:
        low, high = low - 1, high + 1
    span_x = max([record.budget_seconds or 0.0, *(p[0] for p in points)]) or 1.0
    inner_w, inner_h = CHART_W - 2 * CHART_PAD, CHART_H - 2 * CHART_PAD

    def x(t: float) -> float:
        return round(CHART_PAD + inner_w * t / span_x, 1)

    def y(v: float) -> float:
        return round(CHART_PAD + inner_h * (high - v) / (high - low), 1)

    dots = [
        {"x": x(t), "y": y(v), "label": f"#{sid}: {v:.2f} at {duration(t)}"} for t, v, sid in points
    ]
    best, line = float("-inf"), []
    for t, v, _ in points:  # best so far: what a reference run's score would be then
        best = max(best, v)
        line.append(f"{x(t)},{y(best)}")
    return {
        "w": CHART_W,
        "h": CHART_H,
        "dots": dots,
        "best": " ".join(line),
        "baseline_y": y(base) if base is not None else None,
        "left": CHART_PAD,
        "right": CHART_W - CHART_PAD,
        "top": CHART_PAD,
        "bottom": CHART_H - CHART_PAD,
        "high": f"{high:.2f}",
        "low": f"{low:.2f}",
        "span": duration(span_x),
    }


# transcript ---------------------------------------------------------------------------------------


def _transcript(record: RunRecord, problems: list[str]) -> dict[str, Any]:
    """Driver calls (the messages each call added, then the answer) and events, in time order;
    without a driver, the agent's log lines."""
    run_dir = record.run_dir
    items: list[dict[str, Any]] = []
    calls = read_calls(run_dir, problems)
    previous: list[Any] = []
    for n, call in enumerate(calls or [], 1):
        request = call.get("request") if isinstance(call.get("request"), dict) else {}
        messages = request.get("messages") if isinstance(request.get("messages"), list) else []
        new = messages[len(previous) :] if messages[: len(previous)] == previous else messages
        if previous and new and isinstance(new[0], dict) and new[0].get("role") == "assistant":
            new = new[1:]  # the previous call's answer, shown with that call
        shown = [_message(m) for m in new]
        if n == 1 and request.get("system"):
            shown.insert(0, {"role": "system", "text": _clip(str(request["system"]))})
        response = call.get("response") if isinstance(call.get("response"), dict) else {}
        usage = call.get("usage") if isinstance(call.get("usage"), dict) else {}
        error = call.get("error") if isinstance(call.get("error"), dict) else {}
        items.append(
            {
                "kind": "call",
                "t": posix_time(call.get("ts")),
                "n": n,
                "messages": shown,
                "answer": _message({"role": "assistant", **response}) if response else None,
                "input_tokens": usage.get("input_tokens"),
                "output_tokens": usage.get("output_tokens"),
                "cost": call.get("cost_usd"),
                "latency": call.get("latency_s"),
                "error": _clip(f"{error.get('type')}: {error.get('message')}") if error else "",
            }
        )
        if messages:
            previous = messages
    for event in read_log(run_dir, "events.jsonl", problems) or []:
        name = str(event.get("event") or "?")
        if name in QUIET_EVENTS:
            continue
        rest = {k: v for k, v in event.items() if k not in {"event", "timestamp", "level"}}
        items.append(
            {
                "kind": "event",
                "t": posix_time(event.get("timestamp")),
                "name": name,
                "level": str(event.get("level") or "info"),
                "detail": _clip(json.dumps(rest, default=str, sort_keys=True), 2_000),
            }
        )
    items.sort(key=lambda i: i["t"] if i["t"] is not None else float("inf"))
    start = next((i["t"] for i in items if i["t"] is not None), None)
    for item in items:
        item["at"] = duration(item["t"] - start) if item["t"] is not None and start else ""
    hidden = max(0, len(items) - MAX_TRANSCRIPT_ITEMS)
    log_lines: list[str] = []
    if calls is None:
        log_lines = _agent_log(run_dir)
    return {
        "items": items[:MAX_TRANSCRIPT_ITEMS],
        "hidden": hidden,
        "has_driver": calls is not None,
        "log_lines": log_lines,
    }


def _message(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict):
        return {"role": "?", "text": _clip(str(message))}
    content = message.get("content", message.get("text"))
    if isinstance(content, list):  # content parts
        content = "\n".join(
            str(p.get("text", p)) if isinstance(p, dict) else str(p) for p in content
        )
    calls = []
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            args = call.get("arguments")
            calls.append(
                {
                    "name": str(call.get("name") or "?"),
                    "id": str(call.get("id") or ""),
                    "arguments": _clip(
                        json.dumps(args, indent=2, ensure_ascii=False, default=str)
                        if not isinstance(args, str)
                        else args
                    ),
                }
            )
    return {
        "role": str(message.get("role") or "?"),
        "text": _clip("" if content is None else str(content)),
        "tool_calls": calls,
        "tool_call_id": str(message.get("tool_call_id") or ""),
        "name": str(message.get("name") or ""),
    }


def _agent_log(run_dir: Path) -> list[str]:
    from autorl_analysis.sources import read_capped

    text = read_capped(run_dir / "agent.log", run_dir, max_bytes=MAX_TEXT * 20, tail=True)
    return [_clip(line, 2_000) for line in text.splitlines()[-MAX_LOG_LINES:]]


# submissions --------------------------------------------------------------------------------------


def _submissions(
    record: RunRecord, routes: dict[Any, dict[str, Any]], problems: list[str]
) -> list[dict[str, Any]]:
    """Each submission with its route and the code diff from the previous snapshot."""
    from autorl_analysis.sources import CodeHistory

    history = CodeHistory(record.run_dir / "code-history.git", problems)
    rows = []
    before: str | None = None
    for s in record.submissions:
        route = routes.get(s.submission_id) or {}
        diff: list[dict[str, Any]] = []
        if s.code_revision and history.available:
            diff = _diff(history, before, s.code_revision)
        rows.append(
            {
                "id": s.submission_id,
                "elapsed": duration(s.elapsed_s),
                "status": s.status,
                "reason": s.reason or "",
                "score": plus_minus(s.score, s.metrics.get("score_se")),
                "weight_hash": s.weight_hash or "",
                "weight_hash_short": _short(s.weight_hash),
                "code_revision": s.code_revision or "",
                "duplicate_of": s.duplicate_of,
                "copy_of_base": s.copy_of_base,
                "route": route.get("label") or "",
                "methods": ", ".join(str(m) for m in route.get("methods") or []),
                "basis": route.get("basis") or "",
                "diff": diff,
                "diff_from": before or "",
            }
        )
        if s.code_revision:
            before = s.code_revision
    return rows


def _diff(history: Any, before: str | None, after: str) -> list[dict[str, Any]]:
    """Per changed file: its path and unified-diff lines (blobs read capped through git)."""
    old = {path: blob for path, blob, _ in history.files(before)} if before else {}
    new = {path: blob for path, blob, _ in history.files(after)}
    files = []
    budget = MAX_DIFF_LINES
    for path in sorted(set(old) | set(new)):
        if old.get(path) == new.get(path):
            continue
        a = history.blob(old[path]).splitlines() if path in old else []
        b = history.blob(new[path]).splitlines() if path in new else []
        lines = list(difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", lineterm="", n=3))[2:]
        shown = lines[: max(0, budget)]
        budget -= len(shown)
        files.append(
            {
                "path": path,
                "change": "added" if path not in old else "removed" if path not in new else "",
                "lines": [{"text": _clip(x, 1_000), "kind": _line_kind(x)} for x in shown],
                "cut": len(lines) - len(shown),
            }
        )
    return files


def _line_kind(line: str) -> str:
    if line.startswith("@@"):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "ctx")


# formatting ---------------------------------------------------------------------------------------


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters)"


def _short(value: Any) -> str:
    text = str(value or "")
    return text.split(":", 1)[-1][:12] if text else ""


def duration(value: Any) -> str:
    if not isinstance(value, int | float):
        return ""
    value = float(value)
    if value < 120:
        return f"{value:.1f} s"
    if value < 7200:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.2f} h"


def plus_minus(value: Any, se: Any) -> str:
    """A number with its standard error, as the reports write it."""
    if not isinstance(value, int | float):
        return NO_VALUE
    if isinstance(se, int | float) and not isinstance(se, bool):
        return f"{value:.2f} ± {se:.2f}"
    return f"{value:.2f}"
