"""The ``gemini-cli`` agent: Gemini CLI (``gemini -p``) against the run's gateway.

The CLI needs its auth method chosen in ``~/.gemini/settings.json`` (else exit 41) and the
workspace trusted (else exit 55); ``-m`` avoids an extra router call. See
``docs/agents/gemini-cli.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

from autorl_agent_cli_common.adapter import CliAgent
from autorl_agent_cli_common.install import NpmTool
from autorl_agent_cli_common.trajectory import (
    TrajectoryEvent,
    read_jsonl_lenient,
    text_of,
    tool_call,
    tool_result,
    turn_event,
)

from autorl.types import AgentContext

VERSION = "0.61.0"
TOOL = NpmTool(name="gemini-cli", package="@google/gemini-cli", version=VERSION, binary="gemini")

SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


class GeminiCliAgent(CliAgent):
    """``gemini -p --yolo --output-format stream-json -m MODEL`` with API-key auth."""

    name = "gemini-cli"
    tool = TOOL
    ARGV = ("-p", "{prompt}", "--yolo", "--output-format", "stream-json", "-m", "{model}")
    ENV = {
        "GEMINI_API_KEY": "{token}",
        "GOOGLE_GEMINI_BASE_URL": "{gateway}",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_TELEMETRY_ENABLED": "false",
    }

    def configure_home(self, ctx: AgentContext, home: Path, gateway: str, model: str) -> None:
        settings = home / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps(SETTINGS, indent=2) + "\n")

    def native_files(self, home: Path, workspace: Path) -> list[Path]:
        chats = home / ".gemini" / "tmp"
        return sorted(chats.glob("*/chats/session-*.json*"))

    def parse(self, home: Path, workspace: Path) -> list[TrajectoryEvent]:
        return parse_chats(self.native_files(home, workspace))


def _records(path: Path) -> list[dict]:
    """Chat records in order, each in its last version.

    0.61 writes JSON lines: a header, ``{"$set": {"messages": [...]}}`` rows, and records that
    are appended again (same ``id``) as they grow; older versions wrote one JSON document.
    """
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError:
            return []
        return list(data.get("messages", [])) if isinstance(data, dict) else []
    by_id: dict[str, dict] = {}
    for row in read_jsonl_lenient(path):
        found = row.get("$set", {}).get("messages") if "$set" in row else [row]
        for record in found or []:
            if isinstance(record, dict) and record.get("type") and record.get("id"):
                by_id[record["id"]] = record  # insertion order is kept, the content updated
    return list(by_id.values())


def _is_tool_response(record: dict) -> bool:
    parts = record.get("content")
    return (
        isinstance(parts, list)
        and bool(parts)
        and all(isinstance(p, dict) and "functionResponse" in p for p in parts)
    )


def parse_chats(files: list[Path]) -> list[TrajectoryEvent]:
    """Gemini CLI chat records: ``user`` / ``gemini`` messages; a ``gemini`` record lists its
    ``toolCalls`` with their results and carries the turn's ``tokens``."""
    events: list[TrajectoryEvent] = []
    turn = 0
    for path in files:
        for record in _records(path):
            kind = record.get("type")
            when = record.get("timestamp")
            text = text_of(record.get("content"))
            if kind == "user" and not _is_tool_response(record):  # results come with the calls
                events.append(TrajectoryEvent("message", role="user", text=text, time=when))
            elif kind == "gemini":
                turn += 1
                tokens = record.get("tokens") or {}
                model = record.get("model")
                events.append(
                    turn_event(turn, model, when, tokens.get("input"), tokens.get("output"))
                )
                if text:
                    events.append(
                        TrajectoryEvent("message", role="assistant", text=text, time=when)
                    )
                for call in record.get("toolCalls") or []:
                    at = call.get("timestamp") or when
                    events.append(tool_call(call.get("name"), call.get("id"), call.get("args"), at))
                    if call.get("result") is not None or call.get("status"):
                        failed = call.get("status") == "error"
                        output = _result_text(call.get("result"))
                        events.append(tool_result(call.get("id"), output, at, failed))
    return events


def _result_text(result: object) -> str:
    """Tool results are lists of ``functionResponse`` parts; take their output text."""
    if isinstance(result, list):
        texts = []
        for part in result:
            response = (part or {}).get("functionResponse", {}).get("response")
            texts.append(text_of(response) if response is not None else text_of(part))
        return "\n".join(texts)
    return text_of(result)
