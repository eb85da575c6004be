"""The common trajectory format: one JSON object per line, whatever CLI produced it.

Each CLI keeps its own native log (Claude Code and Codex JSON lines, Gemini CLI chat files,
OpenCode's SQLite database, OpenHands event files). The adapters translate it into these events
so reports and comparisons read one format:

``{"type": "message", "role": "assistant", "text": "..."}``
``{"type": "tool_call", "name": "Bash", "call_id": "c1", "arguments": {...}}``
``{"type": "tool_result", "call_id": "c1", "output": "...", "is_error": false}``
``{"type": "turn", "index": 3, "usage": {"input_tokens": 812, "output_tokens": 40}}``

Every event also carries ``agent`` (the adapter name) and ``seq`` (its position); ``time``
(ISO 8601) and ``model`` when the native log has them. Fields that are unknown are left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

EventType = Literal["message", "tool_call", "tool_result", "turn"]
EVENT_TYPES = ("message", "tool_call", "tool_result", "turn")
TRAJECTORY_FILE = "agent_trajectory.jsonl"
MAX_TEXT = 20_000
"""Long tool outputs are cut to this many characters (the native log keeps them whole)."""


@dataclass
class TrajectoryEvent:
    type: EventType
    role: str | None = None
    text: str | None = None
    name: str | None = None
    call_id: str | None = None
    arguments: Any = None
    output: str | None = None
    is_error: bool | None = None
    index: int | None = None
    usage: dict[str, int] | None = None
    model: str | None = None
    time: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self, agent: str, seq: int) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if v not in (None, {}) and k != "extra"}
        for key in ("text", "output"):
            if isinstance(data.get(key), str) and len(data[key]) > MAX_TEXT:
                data[key] = data[key][:MAX_TEXT] + f"... [{len(data[key]) - MAX_TEXT} more chars]"
        data.update(self.extra)
        return {"seq": seq, "agent": agent, **data}


def write_trajectory(events: Iterable[TrajectoryEvent], agent: str, path: Path) -> int:
    """Write the events as JSON lines; returns how many were written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        for count, event in enumerate(events, start=1):
            fh.write(json.dumps(event.to_json(agent, count), default=str) + "\n")
    return count


def read_trajectory(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def text_of(content: Any) -> str:
    """Flatten a provider content value (string, list of parts, dict) into plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(filter(None, (text_of(part) for part in content)))
    if isinstance(content, dict):
        for key in ("text", "output", "content", "stdout"):
            if key in content:
                return text_of(content[key])
        return json.dumps(content, default=str)
    return str(content)


def read_jsonl_lenient(path: Path) -> list[dict[str, Any]]:
    """JSON lines, skipping a torn last line (the CLI may have been killed mid-write)."""
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows
