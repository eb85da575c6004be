"""The agent's trajectory and driver calls: read from the run, exported as OpenAI-style messages.

Sources, all kept by the harness outside the workspace or read with caps from the agent's HOME:
``agent_trajectory.jsonl`` (the common trajectory the CLI adapters write into the run directory),
``home/react-trajectory.jsonl`` (the ``react`` agent's own log, agent-written: hostile, capped),
and ``driver_calls.jsonl`` (the LLM gateway's call log: requests and responses as it saw them).

The export (docs/analysis.md#trajectory-export) is one JSON object per line:
``{"source", "index", "ts", "messages": [...], "usage"?, "model"?}``; ``messages`` follow the
OpenAI chat format (``role`` system/user/assistant/tool, ``content``, ``tool_calls`` with
``{"id", "type": "function", "function": {"name", "arguments"}}``, ``tool_call_id``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from autorl_analysis.routes import Line
from autorl_analysis.sources import read_jsonl

TRAJECTORY_FILES = ("agent_trajectory.jsonl", "home/react-trajectory.jsonl")
MAX_TEXT = 20_000


def load_trajectory(run_dir: Path, problems: list[str]) -> tuple[str, list[dict[str, Any]]]:
    """``(source, events)`` of the first trajectory file found; ('', []) without one."""
    for name in TRAJECTORY_FILES:
        path = run_dir / name
        if path.is_file() and not path.is_symlink():
            return name, read_jsonl(path, run_dir, problems)
    return "", []


def command_of(event: dict[str, Any]) -> str:
    """The shell command (or the arguments) of a tool call, as text."""
    args = event.get("arguments")
    if isinstance(args, dict):
        for key in ("command", "cmd", "input", "script", "code"):
            value = args.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return " ".join(value)
        return json.dumps(args, default=str)[:MAX_TEXT]
    return str(args or "")[:MAX_TEXT]


def trajectory_lines(source: str, events: Sequence[dict[str, Any]]) -> list[Line]:
    """Tool calls and their outputs as lines of text (for logs, routes, crashes, leakage)."""
    lines = []
    for number, event in enumerate(events, 1):
        kind = event.get("type")
        if kind == "tool_call":
            lines.append(Line(source, number, command_of(event)))
        elif kind == "tool_result":
            for text in str(event.get("output") or "")[:MAX_TEXT].splitlines():
                lines.append(Line(source, number, text))
        elif kind == "message":
            lines.append(Line(source, number, str(event.get("text") or "")[:MAX_TEXT]))
    return lines


def commands(source: str, events: Sequence[dict[str, Any]]) -> list[Line]:
    return [
        Line(source, n, command_of(e))
        for n, e in enumerate(events, 1)
        if e.get("type") == "tool_call"
    ]


# export ------------------------------------------------------------------------------------------


def trajectory_messages(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The common trajectory as one OpenAI-style message list."""
    messages: list[dict[str, Any]] = []
    for e in events:
        kind = e.get("type")
        if kind == "message":
            messages.append({"role": e.get("role") or "assistant", "content": e.get("text") or ""})
        elif kind == "tool_call":
            call = {
                "id": str(e.get("id") or f"call_{len(messages)}"),
                "type": "function",
                "function": {
                    "name": str(e.get("name") or ""),
                    "arguments": json.dumps(e.get("arguments") or {}, default=str),
                },
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "tool_result":
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": str(e.get("id") or ""),
                    "content": str(e.get("output") or ""),
                }
            )
    return messages


def call_messages(call: dict[str, Any]) -> list[dict[str, Any]]:
    """One gateway call (request messages + the response) as OpenAI-style messages."""
    request = call.get("request") if isinstance(call.get("request"), dict) else {}
    messages = [_message(m) for m in request.get("messages") or [] if isinstance(m, dict)]
    system = request.get("system")
    if isinstance(system, str) and system and not any(m["role"] == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": system})
    response = call.get("response") if isinstance(call.get("response"), dict) else {}
    if response:
        answer: dict[str, Any] = {"role": "assistant", "content": _text(response.get("text"))}
        calls = [
            {
                "id": str(c.get("id") or ""),
                "type": "function",
                "function": {
                    "name": str(c.get("name") or ""),
                    "arguments": c.get("arguments")
                    if isinstance(c.get("arguments"), str)
                    else json.dumps(c.get("arguments") or {}, default=str),
                },
            }
            for c in response.get("tool_calls") or []
            if isinstance(c, dict)
        ]
        if calls:
            answer["tool_calls"] = calls
        messages.append(answer)
    return messages


def _message(m: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": str(m.get("role") or "user"), "content": _text(m.get("content"))}
    for key in ("tool_calls", "tool_call_id", "name"):
        if key in m:
            out[key] = m[key]
    return out


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(p) for p in content)
    if isinstance(content, dict):
        return _text(content.get("text") or content.get("content") or "")
    return str(content)


def export_rows(run_dir: Path, problems: list[str]) -> list[dict[str, Any]]:
    """The rows of ``trajectory.openai.jsonl``: the agent's trajectory first, then one row per
    driver call."""
    rows: list[dict[str, Any]] = []
    source, events = load_trajectory(run_dir, problems)
    if events:
        rows.append(
            {
                "source": source,
                "index": 0,
                "ts": next((e.get("ts") for e in events if e.get("ts")), ""),
                "messages": trajectory_messages(events),
            }
        )
    calls = read_jsonl(run_dir / "driver_calls.jsonl", run_dir, problems)
    for index, call in enumerate(calls, 1):
        row: dict[str, Any] = {
            "source": "driver_calls.jsonl",
            "index": index,
            "ts": call.get("ts") or "",
            "messages": call_messages(call),
        }
        if isinstance(call.get("usage"), dict):
            row["usage"] = call["usage"]
        if call.get("driver"):
            row["model"] = call["driver"]
        rows.append(row)
    return rows
