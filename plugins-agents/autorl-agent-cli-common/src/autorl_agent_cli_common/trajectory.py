"""The common trajectory format, whatever CLI produced it (the schema of ``autorl-agent-react``).

Each CLI keeps its own native log (Claude Code and Codex JSON lines, Gemini CLI chat files,
OpenCode's SQLite database, OpenHands event files). The adapters translate it into one JSON
object per line, so reports and comparisons read one format. Every line has ``v`` (schema
version), ``ts`` (ISO time from the native log, "" when it has none), ``type``, ``turn`` (the
model call it belongs to, from 1; 0 before the first) and ``agent`` (the adapter name):

- ``turn``: a model call; ``usage`` (``input_tokens``, ``output_tokens``) and ``model`` when
  the native log has them.
- ``message``: ``role`` (user, assistant), ``text``.
- ``tool_call``: ``id``, ``name``, ``arguments`` (an object).
- ``tool_result``: ``id``, ``name``, ``ok`` (bool), ``output`` (text, truncated).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

EventType = Literal["message", "tool_call", "tool_result", "turn"]
EVENT_TYPES = ("message", "tool_call", "tool_result", "turn")
TRAJECTORY_FILE = "agent_trajectory.jsonl"
MAX_TEXT = 20_000
"""Long tool outputs are cut to this many characters (the native log keeps them whole)."""


@dataclass
class TrajectoryEvent:
    """One event as a parser finds it; :func:`to_lines` turns it into the common schema."""

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


SCHEMA_VERSION = 1


def turn_event(
    index: int, model: Any, time: Any, input_tokens: Any, output_tokens: Any
) -> TrajectoryEvent:
    """A ``turn`` event (model call ``index``) with its token usage; a count the native log
    lacks is 0."""
    usage = {"input_tokens": int(input_tokens or 0), "output_tokens": int(output_tokens or 0)}
    return TrajectoryEvent("turn", index=index, model=model, time=time, usage=usage)


def tool_call(name: Any, call_id: Any, arguments: Any, time: Any) -> TrajectoryEvent:
    """A ``tool_call`` event: the tool the model called, the id its result answers to, and
    the arguments as the CLI logged them."""
    return TrajectoryEvent("tool_call", name=name, call_id=call_id, arguments=arguments, time=time)


def tool_result(
    call_id: Any, output: str, time: Any, is_error: bool | None = None
) -> TrajectoryEvent:
    """A ``tool_result`` event: the output of call ``call_id`` (``is_error`` None when the CLI
    does not say)."""
    return TrajectoryEvent(
        "tool_result", call_id=call_id, output=output, is_error=is_error, time=time
    )


def to_lines(events: Iterable[TrajectoryEvent], agent: str) -> list[dict[str, Any]]:
    """Events in the common schema: turn numbers and tool names filled in along the way."""
    lines: list[dict[str, Any]] = []
    turn = 0
    names: dict[str, str] = {}
    for event in events:
        if event.type == "turn":
            turn = event.index or turn + 1
        line: dict[str, Any] = {
            "v": SCHEMA_VERSION,
            "ts": event.time or "",
            "type": event.type,
            "turn": turn,
            "agent": agent,
        }
        if event.type == "message":
            line.update(role=event.role or "assistant", text=_cut(event.text or ""))
        elif event.type == "tool_call":
            names[str(event.call_id)] = event.name or ""
            arguments = event.arguments
            if not isinstance(arguments, dict):
                arguments = {} if arguments is None else {"input": arguments}
            line.update(id=event.call_id, name=event.name, arguments=arguments)
        elif event.type == "tool_result":
            line.update(
                id=event.call_id,
                name=event.name or names.get(str(event.call_id), ""),
                ok=not event.is_error,
                output=_cut(event.output or ""),
            )
        if event.usage:
            line["usage"] = event.usage
        if event.model:
            line["model"] = event.model
        line.update(event.extra)
        lines.append(line)
    return lines


def _cut(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"... [{len(text) - MAX_TEXT} more chars]"


def write_trajectory(events: Iterable[TrajectoryEvent], agent: str, path: Path) -> int:
    """Write the events as JSON lines; returns how many were written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = to_lines(events, agent)
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
    return len(lines)


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
