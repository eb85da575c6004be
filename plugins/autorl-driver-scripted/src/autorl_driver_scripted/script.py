"""Parse and validate a driver script (YAML or JSON), with errors that point at the bad entry.

A script::

    rules:                      # tried first, in order; the first match answers
      - match: "(?i)capital of france"     # regex searched in the last user message
        reply: "Paris."
      - match: "run the tests"
        reply: {tool_call: {name: bash, arguments: {command: pytest -q}}}
    replies:                    # then these, one per call, in order
      - "First answer."
      - {text: "Let me look.", tool_calls: [{name: ls, arguments: {}}]}
    when_exhausted: error       # or repeat_last, cycle (what happens after the last reply)
    replies_by: call            # or turn: pick replies[i] with i = assistant turns so far
    default: "I have nothing scripted for that."   # optional; answers when all else fails
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl_llm.drivers.errors import DriverConfigError

EXHAUSTED = ("error", "repeat_last", "cycle")
REPLIES_BY = ("call", "turn")
TOP_KEYS = {"rules", "replies", "when_exhausted", "replies_by", "default"}
REPLY_KEYS = {"text", "tool_call", "tool_calls", "finish_reason"}


@dataclass(frozen=True)
class ScriptedToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    text: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    finish_reason: str | None = None


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    reply: Reply


@dataclass(frozen=True)
class Script:
    source: str
    rules: tuple[Rule, ...]
    replies: tuple[Reply, ...]
    when_exhausted: str = "error"
    replies_by: str = "call"
    default: Reply | None = None


def _fail(source: str, where: str, message: str, hint: str | None = None) -> DriverConfigError:
    return DriverConfigError(f"driver script {source}: {where}: {message}", hint=hint)


def _tool_call(data: Any, source: str, where: str) -> ScriptedToolCall:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"]:
        raise _fail(
            source,
            where,
            f"a tool call needs a 'name', got {data!r}",
            hint="write {name: bash, arguments: {command: ls}}",
        )
    args = data.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError as exc:
            raise _fail(source, where, f"arguments are not valid JSON: {exc}") from exc
    if not isinstance(args, dict):
        raise _fail(source, where, f"arguments must be a mapping, got {type(args).__name__}")
    return ScriptedToolCall(name=data["name"], arguments=args)


def parse_reply(data: Any, source: str, where: str) -> Reply:
    """A reply is a string, or a mapping with text and/or tool_call / tool_calls."""
    if isinstance(data, str):
        return Reply(text=data)
    if not isinstance(data, dict):
        raise _fail(
            source, where, f"a reply must be a string or a mapping, got {type(data).__name__}"
        )
    unknown = sorted(set(data) - REPLY_KEYS)
    if unknown:
        raise _fail(
            source,
            where,
            f"unknown key(s) {', '.join(unknown)}",
            hint=f"a reply takes: {', '.join(sorted(REPLY_KEYS))}",
        )
    calls = []
    if "tool_call" in data:
        calls.append(_tool_call(data["tool_call"], source, f"{where}.tool_call"))
    raw_calls = data.get("tool_calls", [])
    if not isinstance(raw_calls, list):
        raise _fail(source, f"{where}.tool_calls", "expected a list")
    calls.extend(_tool_call(c, source, f"{where}.tool_calls[{i}]") for i, c in enumerate(raw_calls))
    text = data.get("text", "")
    if not isinstance(text, str):
        raise _fail(source, f"{where}.text", f"expected a string, got {type(text).__name__}")
    if not text and not calls:
        raise _fail(source, where, "a reply needs 'text' or a tool call")
    finish = data.get("finish_reason")
    if finish is not None and finish not in ("stop", "length", "tool_calls", "content_filter"):
        raise _fail(source, f"{where}.finish_reason", f"unknown value {finish!r}")
    return Reply(text=text, tool_calls=tuple(calls), finish_reason=finish)


def parse_script(data: Any, source: str) -> Script:
    """Validate a loaded script (a mapping, or a bare list of replies)."""
    if isinstance(data, list):
        data = {"replies": data}
    if not isinstance(data, dict):
        raise _fail(
            source,
            "top level",
            f"expected a mapping, got {type(data).__name__}",
            hint="start the file with 'replies:' and/or 'rules:'",
        )
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise _fail(
            source,
            "top level",
            f"unknown key(s) {', '.join(unknown)}",
            hint=f"a script takes: {', '.join(sorted(TOP_KEYS))}",
        )
    rules = []
    raw_rules = data.get("rules") or []
    if not isinstance(raw_rules, list):
        raise _fail(source, "rules", "expected a list of {match, reply}")
    for i, rule in enumerate(raw_rules):
        where = f"rules[{i}]"
        if not isinstance(rule, dict) or "match" not in rule or "reply" not in rule:
            raise _fail(source, where, "a rule needs 'match' (a regex) and 'reply'")
        try:
            pattern = re.compile(str(rule["match"]))
        except re.error as exc:
            raise _fail(
                source, f"{where}.match", f"invalid regex {rule['match']!r}: {exc}"
            ) from exc
        rules.append(Rule(pattern, parse_reply(rule["reply"], source, f"{where}.reply")))
    raw_replies = data.get("replies") or []
    if not isinstance(raw_replies, list):
        raise _fail(source, "replies", "expected a list of replies")
    replies = tuple(parse_reply(r, source, f"replies[{i}]") for i, r in enumerate(raw_replies))
    default = parse_reply(data["default"], source, "default") if "default" in data else None
    if not rules and not replies and default is None:
        raise _fail(source, "top level", "the script has no rules, replies or default")
    when = data.get("when_exhausted", "error")
    if when not in EXHAUSTED:
        raise _fail(source, "when_exhausted", f"{when!r} is not one of {', '.join(EXHAUSTED)}")
    by = data.get("replies_by", "call")
    if by not in REPLIES_BY:
        raise _fail(source, "replies_by", f"{by!r} is not one of {', '.join(REPLIES_BY)}")
    return Script(source, tuple(rules), replies, when, by, default)


def load_script(path: Path) -> Script:
    """Read a .yaml/.yml/.json script file."""
    source = str(path)
    if not path.is_file():
        raise DriverConfigError(
            f"driver script {source} does not exist",
            hint="name the driver scripted/<path-to-script.yaml> (relative to the current "
            "directory or absolute)",
        )
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _fail(source, f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from exc
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}" if mark else "file"
            raise _fail(source, where, f"invalid YAML: {getattr(exc, 'problem', exc)}") from exc
    return parse_script(data, source)
