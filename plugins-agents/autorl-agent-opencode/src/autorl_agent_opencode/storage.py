"""Read OpenCode's SQLite store (``~/.local/share/opencode/opencode.db``) as common events.

Tables used: ``message`` (one row per user or assistant message; ``data`` JSON holds ``role``,
``modelID`` and the assistant's ``tokens``) and ``part`` (the pieces of a message: ``text``,
``tool`` with its ``state`` input and output, ``step-start`` / ``step-finish``). The database is
opened read-only, so a store left locked by a killed CLI is still readable.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from autorl_agent_cli_common.trajectory import (
    TrajectoryEvent,
    text_of,
    tool_call,
    tool_result,
    turn_event,
)


def _iso(millis: Any) -> str | None:
    from datetime import UTC, datetime

    try:
        return datetime.fromtimestamp(int(millis) / 1000, UTC).isoformat()
    except (TypeError, ValueError, OverflowError):
        return None


def _rows(path: Path) -> list[tuple[dict[str, Any], list[dict[str, Any]], Any]]:
    uri = f"file:{path}?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:
        messages = db.execute(
            "SELECT id, time_created, data FROM message ORDER BY time_created, id"
        ).fetchall()
        parts = db.execute("SELECT message_id, data FROM part ORDER BY time_created, id").fetchall()
    by_message: dict[str, list[dict[str, Any]]] = {}
    for message_id, data in parts:
        by_message.setdefault(message_id, []).append(json.loads(data))
    return [(json.loads(data), by_message.get(mid, []), created) for mid, created, data in messages]


def parse_database(path: Path) -> list[TrajectoryEvent]:
    events: list[TrajectoryEvent] = []
    turn = 0
    try:
        rows = _rows(path)
    except sqlite3.Error:
        return events
    for message, parts, created in rows:
        role = message.get("role")
        when = _iso(created)
        if role == "assistant":
            turn += 1
            tokens = message.get("tokens") or {}
            model = message.get("modelID")
            events.append(turn_event(turn, model, when, tokens.get("input"), tokens.get("output")))
        for part in parts:
            kind = part.get("type")
            if kind == "text" and part.get("text"):
                events.append(TrajectoryEvent("message", role=role, text=part["text"], time=when))
            elif kind == "tool":
                state = part.get("state") or {}
                start = _iso((state.get("time") or {}).get("start")) or when
                events.append(
                    tool_call(part.get("tool"), part.get("callID"), state.get("input"), start)
                )
                if state.get("status") in ("completed", "error"):
                    output = text_of(state.get("output", state.get("error")))
                    end = _iso((state.get("time") or {}).get("end")) or start
                    failed = state.get("status") == "error"
                    events.append(tool_result(part.get("callID"), output, end, failed))
    return events
