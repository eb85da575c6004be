"""The common trajectory format: one JSON line per event of an agent's session.

Small on purpose, so any scaffold's log can be converted to it and reports can read them alike.
Every line has ``v`` (schema version), ``ts`` (UTC ISO time), ``type``, ``turn`` (the model
call it belongs to, from 1; 0 before the first call) and ``agent`` (``react``; the CLI adapters
write the same schema). Types and their extra fields:

- ``turn``: a model call starts.
- ``message``: ``role`` (system, user, assistant), ``text``; assistant messages add ``usage``
  (``input_tokens``, ``output_tokens``) when the API reported it.
- ``tool_call``: ``id``, ``name``, ``arguments`` (an object).
- ``tool_result``: ``id``, ``name``, ``ok`` (bool), ``output`` (text, truncated), ``seconds``.
- ``end``: ``reason`` (model_stopped, max_turns, driver_budget, driver_error, interrupted) and
  ``detail``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
TYPES = ("turn", "message", "tool_call", "tool_result", "end")
REQUIRED = {
    "turn": (),
    "message": ("role", "text"),
    "tool_call": ("id", "name", "arguments"),
    "tool_result": ("id", "name", "ok", "output"),
    "end": ("reason",),
}


class TrajectoryWriter:
    """Appends events, flushed per line: a killed agent leaves a readable trajectory."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.turn = 0

    def write(self, type_: str, **fields: Any) -> dict[str, Any]:
        if type_ not in TYPES:
            raise ValueError(f"unknown trajectory event type {type_!r}")
        now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        event = {
            "v": SCHEMA_VERSION,
            "ts": now,
            "type": type_,
            "turn": self.turn,
            "agent": "react",
            **fields,
        }
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
        return event


def read_trajectory(path: str | Path) -> list[dict[str, Any]]:
    """All events of a trajectory file; a malformed line is an error naming file and line."""
    events = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not a JSON line ({exc})") from exc
        kind = event.get("type")
        missing = [k for k in REQUIRED.get(kind, ("type",)) if k not in event]
        if kind not in TYPES or missing:
            raise ValueError(f"{path}:{n}: bad {kind!r} event (missing {missing or 'type'})")
        events.append(event)
    return events
