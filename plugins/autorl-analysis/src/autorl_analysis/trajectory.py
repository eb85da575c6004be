"""The agent's trajectory and driver calls: read from the run, exported as OpenAI-style messages.

Sources: the trajectory file the run's agent declares (``AgentSpec.trajectory``:
``agent_trajectory.jsonl``, the common trajectory the CLI adapters write into the run
directory; ``home/react-trajectory.jsonl``, the ``react`` agent's own log, agent-written:
hostile, capped), never another agent's file, and ``driver_calls.jsonl`` (the LLM gateway's call
log: requests and responses as it saw them). A trajectory is what the agent says it did
(``basis: "claimed"``); the call log is what the gateway saw (``basis: "observed"``).

The export (docs/analysis.md#trajectory-export) is one JSON object per line:
``{"source", "basis", "index", "ts", "messages": [...], "usage"?, "model"?}``; texts are
bounded and hold no control characters (:func:`autorl.text.sanitize`); ``messages`` follow the
OpenAI chat format (``role`` system/user/assistant/tool, ``content``, ``tool_calls`` with
``{"id", "type": "function", "function": {"name", "arguments"}}``, ``tool_call_id``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from autorl_records import read_calls

from autorl.text import sanitize
from autorl_analysis.routes import Line
from autorl_analysis.sources import read_jsonl

MAX_TEXT = 20_000


def declared_trajectory(agent: str | None, problems: list[str]) -> str | None:
    """The run-relative trajectory file the run's agent declares (``AgentSpec.trajectory``);
    None when it declares none or is not installed here (a problem line says so)."""
    if not agent:
        return None
    from autorl.registry import get_registry

    try:
        spec = get_registry().get("agent", agent).spec
    except Exception as exc:  # an unknown or broken agent plugin: no trajectory, say why
        problems.append(f"agent {agent!r} not found here: its trajectory is not read ({exc})"[:300])
        return None
    name = getattr(spec, "trajectory", None)
    if not isinstance(name, str) or not name:
        return None
    path = Path(name)
    if path.is_absolute() or ".." in path.parts:
        problems.append(f"agent {agent!r} declares a trajectory outside the run: {name[:100]!r}")
        return None
    return path.as_posix()


def load_trajectory(
    run_dir: Path, problems: list[str], declared: str | None
) -> tuple[str, list[dict[str, Any]]]:
    """``(source, events)`` of the trajectory file the run's agent declares
    (:func:`declared_trajectory`); ('', []) without one. Files other agents would write are not
    read: an agent that plants ``home/react-trajectory.jsonl`` does not get it believed."""
    if not declared:
        return "", []
    path = run_dir / declared
    if path.is_file() and not path.is_symlink():
        return declared, read_jsonl(path, run_dir, problems)
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
            role = _role(e.get("role") or "assistant")
            messages.append({"role": role, "content": _bounded(e.get("text"))})
        elif kind == "tool_call":
            call = {
                "id": sanitize(e.get("id") or f"call_{len(messages)}", 200),
                "type": "function",
                "function": {
                    "name": sanitize(e.get("name"), 200),
                    "arguments": _arguments(e.get("arguments") or {}),
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
                    "tool_call_id": sanitize(e.get("id"), 200),
                    "content": _bounded(e.get("output")),
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
        text = _bounded(_text(response.get("text")))
        answer: dict[str, Any] = {"role": "assistant", "content": text}
        calls = [
            {
                "id": sanitize(c.get("id"), 200),
                "type": "function",
                "function": {
                    "name": sanitize(c.get("name"), 200),
                    "arguments": _bounded(c.get("arguments"))
                    if isinstance(c.get("arguments"), str)
                    else _arguments(c.get("arguments") or {}),
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
    out: dict[str, Any] = {
        "role": _role(m.get("role") or "user"),
        "content": _bounded(_text(m.get("content"))),
    }
    for key in ("tool_calls", "tool_call_id", "name"):
        if key in m:
            value = m[key]
            out[key] = sanitize(value, 200) if isinstance(value, str) else value
    return out


ROLES = ("system", "user", "assistant", "tool")


def _role(value: Any) -> str:
    """One of the OpenAI roles; anything else the trajectory says is kept as ``user``."""
    return value if value in ROLES else "user"


def _arguments(value: Any) -> str:
    """A tool call's arguments as a JSON string, every string in them inert (no control
    characters, even JSON-escaped ones), the whole bounded."""
    return json.dumps(_inert(value), default=str)[:MAX_TEXT]


def _inert(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return _bounded(value)
    if depth > 8:
        return None
    if isinstance(value, dict):
        return {sanitize(k, 200): _inert(v, depth + 1) for k, v in list(value.items())[:200]}
    if isinstance(value, list):
        return [_inert(v, depth + 1) for v in value[:200]]
    return value


def _bounded(text: Any) -> str:
    """A message's text as data: no control characters or escape sequences, at most
    :data:`MAX_TEXT` characters (newlines kept)."""
    return sanitize(text, MAX_TEXT, multiline=True)


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


def export_rows(
    run_dir: Path, problems: list[str], trajectory: str | None = None
) -> list[dict[str, Any]]:
    """The rows of ``trajectory.openai.jsonl``: the agent's declared ``trajectory`` first
    (claimed), then one row per driver call (observed by the gateway)."""
    rows: list[dict[str, Any]] = []
    source, events = load_trajectory(run_dir, problems, trajectory)
    if events:
        rows.append(
            {
                "source": source,
                "basis": "claimed",
                "index": 0,
                "ts": sanitize(next((e.get("ts") for e in events if e.get("ts")), ""), 64),
                "messages": trajectory_messages(events),
            }
        )
    calls = read_calls(run_dir, problems) or []
    for index, call in enumerate(calls, 1):
        row: dict[str, Any] = {
            "source": "driver_calls.jsonl",
            "basis": "observed",
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
