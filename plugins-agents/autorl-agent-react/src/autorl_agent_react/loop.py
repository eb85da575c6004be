"""The react agent's process: call the model through the gateway, run its tools, repeat.

Started by the harness as ``python -m autorl_agent_react.loop``; it reads the run's settings
from the environment the harness gives it (``AUTORL_GATEWAY_URL``, ``AUTORL_TOKEN``,
``AUTORL_GRADER_URL``, ``AUTORL_WORKSPACE``) and never sees an upstream API key. It speaks
OpenAI Chat Completions (non-streaming) to the gateway, whatever backend answers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from autorl_agent_react.prompt import first_messages
from autorl_agent_react.tools import TOOL_SPECS, Tools
from autorl_agent_react.trajectory import TrajectoryWriter

RETRIES = 3


class Stop(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="autorl-react")
    p.add_argument("--trajectory", type=Path, required=True)
    p.add_argument("--max-turns", type=int, default=60)
    p.add_argument("--command-timeout", type=float, default=900.0)
    p.add_argument("--output-chars", type=int, default=6000)
    p.add_argument("--max-tokens", type=int, default=4096)
    p.add_argument("--temperature", type=float, default=None)
    return p.parse_args(argv)


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"autorl react agent: ${name} is not set (the harness sets it)")
    return value


def call_model(
    client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    """One chat completion; a spent budget or a client error stops the session."""
    for attempt in range(RETRIES):
        try:
            r = client.post(url, json=body, headers=headers)
        except httpx.TransportError as exc:
            error = f"{type(exc).__name__}: {exc}"
        else:
            if r.status_code == 200:
                return r.json()
            error = f"HTTP {r.status_code}: {r.text[:500]}"
            if r.status_code in (403, 429) and "budget is spent" in r.text:
                raise Stop("driver_budget", error)
            if r.status_code < 500:
                raise Stop("driver_error", error)
        time.sleep(2**attempt)
    raise Stop("driver_error", error)


def run(args: argparse.Namespace) -> str:
    workspace = Path(_env("AUTORL_WORKSPACE"))
    gateway = _env("AUTORL_GATEWAY_URL").rstrip("/")
    token = _env("AUTORL_TOKEN")
    model = os.environ.get("AUTORL_DRIVER", "model").partition("/")[2] or "model"
    tools = Tools(
        workspace=workspace,
        grader_url=_env("AUTORL_GRADER_URL"),
        gateway_url=gateway,
        token=token,
        command_timeout_s=args.command_timeout,
        output_chars=args.output_chars,
    )
    log = TrajectoryWriter(args.trajectory)
    _, budget = tools.run("check_budget", {})
    messages = first_messages(workspace, budget)
    for m in messages:
        log.write("message", role=m["role"], text=m["content"])
    headers = {"authorization": f"Bearer {token}"}
    body: dict[str, Any] = {"model": model, "tools": TOOL_SPECS, "max_tokens": args.max_tokens}
    if args.temperature is not None:
        body["temperature"] = args.temperature
    with httpx.Client(timeout=600) as client:
        try:
            for turn in range(1, args.max_turns + 1):
                log.turn = turn
                log.write("turn")
                reply = call_model(
                    client,
                    f"{gateway}/v1/chat/completions",
                    {**body, "messages": messages},
                    headers,
                )
                message = reply["choices"][0]["message"]
                usage = reply.get("usage") or {}
                log.write(
                    "message",
                    role="assistant",
                    text=message.get("content") or "",
                    usage={
                        "input_tokens": usage.get("prompt_tokens", 0),
                        "output_tokens": usage.get("completion_tokens", 0),
                    },
                )
                calls = message.get("tool_calls") or []
                messages.append(
                    {"role": "assistant", "content": message.get("content"), "tool_calls": calls}
                    if calls
                    else {"role": "assistant", "content": message.get("content") or ""}
                )
                if not calls:
                    raise Stop("model_stopped", "the model answered without calling a tool")
                for call in calls:
                    messages.append(_run_tool(tools, log, call))
            raise Stop("max_turns", f"{args.max_turns} turns used")
        except Stop as stop:
            log.write("end", reason=stop.reason, detail=stop.detail)
            return stop.reason


def _run_tool(tools: Tools, log: TrajectoryWriter, call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function") or {}
    name = str(fn.get("name"))
    try:
        arguments = json.loads(fn.get("arguments") or "{}")
        if not isinstance(arguments, dict):
            raise ValueError("arguments must be a JSON object")
    except ValueError as exc:
        arguments, result = {}, (False, f"arguments are not a JSON object: {exc}")
    else:
        result = None
    log.write("tool_call", id=call.get("id"), name=name, arguments=arguments)
    started = time.monotonic()
    ok, output = result or tools.run(name, arguments)
    log.write(
        "tool_result",
        id=call.get("id"),
        name=name,
        ok=ok,
        output=output,
        seconds=round(time.monotonic() - started, 3),
    )
    return {"role": "tool", "tool_call_id": call.get("id"), "content": output}


def main(argv: list[str] | None = None) -> int:
    reason = run(parse_args(argv))
    print(f"react agent ended: {reason}", file=sys.stderr)
    return 0 if reason in ("model_stopped", "max_turns", "driver_budget") else 1


if __name__ == "__main__":
    sys.exit(main())
