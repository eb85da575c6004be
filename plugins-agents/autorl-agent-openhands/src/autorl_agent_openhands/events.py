"""Read OpenHands conversations (``~/.openhands/conversations/<id>/``) as common events.

``events/event-NNNNN-<uuid>.json`` files, in order: ``MessageEvent`` (``llm_message`` with
role and content parts), ``ActionEvent`` (``tool_name``, ``tool_call_id``, ``tool_call``
arguments, ``llm_response_id``), ``ObservationEvent`` (the tool's output). Token counts per
model response are in ``base_state.json`` (``stats.usage_to_metrics.*.token_usages``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autorl_agent_cli_common.trajectory import TrajectoryEvent, text_of, tool_call, tool_result


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _usages(conversation: Path) -> dict[str, dict[str, int]]:
    stats = _load(conversation / "base_state.json").get("stats") or {}
    found: dict[str, dict[str, int]] = {}
    for metrics in (stats.get("usage_to_metrics") or {}).values():
        for usage in (metrics or {}).get("token_usages") or []:
            found[str(usage.get("response_id"))] = {
                "input_tokens": int(usage.get("prompt_tokens") or 0),
                "output_tokens": int(usage.get("completion_tokens") or 0),
            }
    return found


def _arguments(event: dict[str, Any]) -> Any:
    raw = (event.get("tool_call") or {}).get("arguments")
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw if raw is not None else event.get("action")


def parse_conversation(conversation: Path) -> list[TrajectoryEvent]:
    events: list[TrajectoryEvent] = []
    usages = _usages(conversation)
    responses: set[str] = set()
    for path in sorted((conversation / "events").glob("event-*.json")):
        event = _load(path)
        kind = event.get("kind")
        when = event.get("timestamp")
        if kind == "MessageEvent":
            message = event.get("llm_message") or {}
            role = message.get("role") or event.get("source")
            text = text_of(message.get("content"))
            if role == "assistant":
                _turn(events, event, usages, responses, when)
            if text:
                events.append(TrajectoryEvent("message", role=role, text=text, time=when))
        elif kind == "ActionEvent":
            _turn(events, event, usages, responses, when)
            call_id = event.get("tool_call_id")
            events.append(tool_call(event.get("tool_name"), call_id, _arguments(event), when))
        elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            observation = event.get("observation") or {}
            output = text_of(observation.get("content", event.get("error")))
            failed = bool(observation.get("is_error")) or kind != "ObservationEvent"
            events.append(tool_result(event.get("tool_call_id"), output, when, failed))
    return events


def _turn(
    events: list[TrajectoryEvent],
    event: dict[str, Any],
    usages: dict[str, dict[str, int]],
    responses: set[str],
    when: str | None,
) -> None:
    """One ``turn`` per model response (several tool calls may share one)."""
    response = event.get("llm_response_id")
    if not response or response in responses:
        return
    responses.add(response)
    events.append(
        TrajectoryEvent("turn", index=len(responses), time=when, usage=usages.get(response))
    )


def parse_conversations(directory: Path) -> list[TrajectoryEvent]:
    events: list[TrajectoryEvent] = []
    if directory.is_dir():
        for conversation in sorted(p for p in directory.iterdir() if p.is_dir()):
            events.extend(parse_conversation(conversation))
    return events
