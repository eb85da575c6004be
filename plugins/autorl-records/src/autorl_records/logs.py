"""The run record's logs: the one reader of its JSON-lines logs (``events.jsonl`` from the
engine, ``driver_calls.jsonl`` from the LLM gateway, ``egress.jsonl`` from the egress proxy; all
outside the workspace, so these are the harness's own numbers).

``read_log`` gives any log's entries; ``read_calls`` the call log's (the analysis and the
trajectory export need the messages); ``call_rows`` one typed row per call;
``driver_call_summary`` the totals ``summary.json`` carries, with the driver budget and upstream
health from ``run.json``. A log can be large (every request and response): it is read capped,
what is past the cap is a problem, never a crash.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

CALL_LOG = "driver_calls.jsonl"
EVENT_LOG = "events.jsonl"
EGRESS_LOG = "egress.jsonl"
MAX_LOG_BYTES = 256 * 1024**2
MAX_ENTRIES = 200_000


class CallRow(BaseModel):
    """One driver call as the reports and campaigns count it."""

    model_config = ConfigDict(frozen=True)

    n: int
    ts: str | None = None
    api: str | None = None
    streamed: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float | None = None
    tool_calls: list[str] = []
    error: str | None = None
    error_message: str | None = None
    refused: bool = False
    attempts: int = 1

    @property
    def answered(self) -> bool:
        return self.error is None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def when(self) -> float | None:
        """The call's time as a POSIX timestamp (None when its ``ts`` is not ISO 8601)."""
        return posix_time(self.ts)


def posix_time(ts: Any) -> float | None:
    """A log entry's ISO 8601 time (``ts``, ``timestamp``) as a POSIX timestamp; None when it
    is not one."""
    if not isinstance(ts, str):
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def read_log(
    run_dir: Path, name: str, problems: list[str] | None = None
) -> list[dict[str, Any]] | None:
    """The JSON objects of one of the run's JSON-lines logs (``events.jsonl``,
    ``driver_calls.jsonl``, ``egress.jsonl``), in order, read capped; None when the run has no
    such log. A bad line is skipped with a note in ``problems``."""
    notes = problems if problems is not None else []
    path = Path(run_dir) / name
    if not path.is_file() or path.is_symlink():
        return None
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_LOG_BYTES + 1)
    except OSError as exc:
        notes.append(f"{name} unreadable ({exc.strerror or exc})")
        return []
    if len(data) > MAX_LOG_BYTES:
        notes.append(f"{name}: only the first {MAX_LOG_BYTES >> 20} MiB read")
        data = data[:MAX_LOG_BYTES]
    return parse_jsonl(data.decode("utf-8", errors="replace"), name, notes)


def parse_jsonl(
    text: str, name: str, problems: list[str], max_entries: int = MAX_ENTRIES
) -> list[dict[str, Any]]:
    """The JSON objects of JSON-lines ``text`` (of the file ``name``), in order; a line that
    is not one is skipped with a note, entries past ``max_entries`` are left with one."""
    entries: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(entries) >= max_entries:
            problems.append(f"{name}: only the first {max_entries} entries read")
            break
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            problems.append(f"{name}:{n}: not JSON (skipped)")
            continue
        if isinstance(entry, dict):
            entries.append(entry)
        else:
            problems.append(f"{name}:{n}: not a JSON object (skipped)")
    return entries


def read_calls(run_dir: Path, problems: list[str] | None = None) -> list[dict[str, Any]] | None:
    """The call log's entries in order; None when the run had no driver (no log)."""
    return read_log(run_dir, CALL_LOG, problems)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


MESSAGE_CHARS = 500
"""An upstream error's message kept per row (it can echo what the agent sent)."""
NAME_CHARS, MAX_TOOL_NAMES = 100, 32


def _text(value: Any, limit: int) -> str | None:
    return None if value is None else str(value)[:limit]


def call_row(n: int, entry: dict[str, Any]) -> CallRow:
    """One call's row; the text in it that the agent or its model chose (an error's message,
    tool names) is bounded. Rendering escapes it (``autorl.text``)."""
    usage, response = _dict(entry.get("usage")), _dict(entry.get("response"))
    meta = _dict(_dict(entry.get("request")).get("metadata"))
    error = _dict(entry.get("error"))
    latency = entry.get("latency_s")
    return CallRow(
        n=n,
        ts=_text(entry.get("ts"), 64),
        api=_text(meta.get("api"), NAME_CHARS),
        streamed=bool(entry.get("streamed")),
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        cost_usd=float(entry.get("cost_usd") or 0.0),
        latency_s=float(latency) if isinstance(latency, int | float) else None,
        tool_calls=[
            str(_dict(c).get("name"))[:NAME_CHARS]
            for c in list(response.get("tool_calls") or [])[:MAX_TOOL_NAMES]
        ],
        error=_text(error.get("type"), NAME_CHARS),
        error_message=_text(error.get("message"), MESSAGE_CHARS),
        refused=bool(entry.get("refused")),
        attempts=int(entry.get("attempts") or (0 if entry.get("refused") else 1)),
    )


def call_rows(run_dir: Path, problems: list[str] | None = None) -> list[CallRow] | None:
    """One typed row per call; None when the run had no driver."""
    notes = problems if problems is not None else []
    entries = read_calls(run_dir, notes)
    return None if entries is None else _rows(entries, notes)


def _rows(entries: list[dict[str, Any]], notes: list[str]) -> list[CallRow]:
    rows: list[CallRow] = []
    for entry in entries:
        try:
            rows.append(call_row(len(rows) + 1, entry))
        except (TypeError, ValueError) as exc:
            notes.append(f"{CALL_LOG}: call {len(rows) + 1} unreadable ({exc})")
    return rows


_SUMMARIES: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}
"""The call log's totals by file, with the (size, mtime) they were read at: a run's end renders
its summary several times (the basic report, the analysis, the results store, trackers), and
the log can be large; read once while it does not change."""


def driver_call_summary(run_dir: Path, run_fields: dict[str, Any]) -> dict[str, Any] | None:
    """Totals and one row per call (``summary.json``'s ``driver_calls``); None without a
    driver. ``run_fields`` is ``run.json`` (the driver budget and the upstream's health)."""
    path = Path(run_dir) / CALL_LOG
    try:
        info = path.lstat()
    except OSError:
        return None
    stamp = (info.st_size, info.st_mtime_ns)
    cached = _SUMMARIES.get(path)
    if cached is None or cached[0] != stamp:
        totals = _call_totals(run_dir)
        if totals is None:
            return None
        if len(_SUMMARIES) >= 16:
            _SUMMARIES.clear()
        cached = _SUMMARIES[path] = (stamp, totals)
    return {
        **cached[1],
        "rows": list(cached[1]["rows"]),
        "problems": list(cached[1]["problems"]),
        "budget": run_fields.get("driver_usage"),
        "health": run_fields.get("driver_health"),
    }


def _call_totals(run_dir: Path) -> dict[str, Any] | None:
    problems: list[str] = []
    entries = read_calls(run_dir, problems)
    if entries is None:
        return None
    rows = _rows(entries, problems)
    ok = [r for r in rows if r.answered]
    failed = [r for r in rows if r.error is not None and not _refused(r)]
    return {
        "driver": next((e.get("driver") for e in entries), None),
        "calls": len(ok),
        "errors": len(failed),
        "refused": sum(1 for r in rows if _refused(r)),
        "retried_calls": sum(1 for r in rows if r.attempts > 1),
        "retries": sum(max(0, r.attempts - 1) for r in rows),
        "last_error": failed[-1].error_message if failed else None,
        "input_tokens": sum(r.input_tokens for r in ok),
        "output_tokens": sum(r.output_tokens for r in ok),
        "total_tokens": sum(r.tokens for r in ok),
        "cost_usd": round(sum(r.cost_usd for r in ok), 6),
        "scripted": any(e.get("scripted") for e in entries),
        "rows": [r.model_dump() for r in rows],
        "problems": problems,
    }


def _refused(row: CallRow) -> bool:
    """Refused by the gateway (the driver budget), not failed upstream."""
    return row.refused or row.error == "BudgetRefused"
