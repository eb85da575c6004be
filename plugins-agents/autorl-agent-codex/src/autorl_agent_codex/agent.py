"""The ``codex`` agent: Codex CLI (``codex exec``) against the run's gateway.

Codex ignores ``OPENAI_BASE_URL`` for its built-in provider (it went to the vendor and hung), so
the adapter declares a custom provider ``autorl`` with the gateway's ``/v1`` base URL and the
Responses wire API (``wire_api="chat"`` is rejected by this version). See
``docs/agents/codex.md``.
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
)

from autorl.types import AgentContext

VERSION = "0.169.0"
TOOL = NpmTool(name="codex", package="@openai/codex", version=VERSION, binary="codex")
PROVIDER = "autorl"
KEY_VAR = "AUTORL_GATEWAY_KEY"


def provider_config(gateway: str) -> str:
    """The ``-c model_providers.autorl=...`` value (TOML inline table)."""
    fields = {
        "name": PROVIDER,
        "base_url": f"{gateway}/v1",
        "env_key": KEY_VAR,
        "wire_api": "responses",
    }
    body = ",".join(f"{k}={json.dumps(v)}" for k, v in fields.items())
    return f"model_providers.{PROVIDER}={{{body}}}"


class CodexAgent(CliAgent):
    """``codex exec --json`` with approvals and its sandbox off (autorl's sandbox applies)."""

    name = "codex"
    tool = TOOL
    ARGV = (
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "-c",
        "model={model_json}",
        "-c",
        f"model_provider={json.dumps(PROVIDER)}",
        "-c",
        "{provider}",
        "-c",
        "analytics.enabled=false",
        "-c",
        "check_for_update_on_startup=false",
        "--disable",
        "plugins",
        "{prompt}",
    )
    ENV = {KEY_VAR: "{token}", "CODEX_HOME": "{home}/.codex"}

    def fields(self, ctx: AgentContext, gateway: str, model: str, prompt: str) -> dict[str, str]:
        quoted = {"model_json": json.dumps(model), "provider": provider_config(gateway)}
        return {**super().fields(ctx, gateway, model, prompt), **quoted}

    def configure_home(self, ctx: AgentContext, home: Path, gateway: str, model: str) -> None:
        (home / ".codex").mkdir(parents=True, exist_ok=True)

    def native_files(self, home: Path, workspace: Path) -> list[Path]:
        return sorted((home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))

    def parse(self, home: Path, workspace: Path) -> list[TrajectoryEvent]:
        return parse_rollouts(self.native_files(home, workspace))


def parse_rollouts(files: list[Path]) -> list[TrajectoryEvent]:
    """Codex rollout files: ``response_item`` rows (messages, function calls and outputs) and
    ``event_msg`` rows whose ``token_count`` closes a model call.

    A model call's items come before its token count, so a ``turn`` is opened at the first
    item the model produced and gets its usage when the count arrives.
    """
    events: list[TrajectoryEvent] = []
    turn: TrajectoryEvent | None = None
    index = 0

    def open_turn(when: str | None) -> None:
        nonlocal turn, index
        if turn is None:
            index += 1
            turn = TrajectoryEvent("turn", index=index, time=when)
            events.append(turn)

    for path in files:
        for row in read_jsonl_lenient(path):
            payload = row.get("payload") or {}
            when = row.get("timestamp")
            kind = payload.get("type")
            if row.get("type") == "response_item":
                if kind == "message":
                    role = payload.get("role")
                    text = text_of(payload.get("content"))
                    if text and role in ("user", "assistant"):
                        if role == "assistant":
                            open_turn(when)
                        events.append(TrajectoryEvent("message", role=role, text=text, time=when))
                elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
                    open_turn(when)
                    raw = payload.get("arguments", payload.get("input", payload.get("action")))
                    try:
                        arguments = json.loads(raw) if isinstance(raw, str) else raw
                    except json.JSONDecodeError:
                        arguments = raw
                    name = payload.get("name") or kind
                    events.append(tool_call(name, payload.get("call_id"), arguments, when))
                elif kind in ("function_call_output", "custom_tool_call_output"):
                    events.append(
                        tool_result(payload.get("call_id"), text_of(payload.get("output")), when)
                    )
            elif row.get("type") == "event_msg" and kind == "token_count":
                last = ((payload.get("info") or {}).get("last_token_usage")) or {}
                if last:
                    open_turn(when)
                    assert turn is not None
                    turn.usage = {
                        "input_tokens": int(last.get("input_tokens") or 0),
                        "output_tokens": int(last.get("output_tokens") or 0),
                    }
                    turn = None
    return events
