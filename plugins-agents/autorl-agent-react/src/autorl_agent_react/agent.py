"""The ``react`` agent's adapter: checks its options, copies the loop into the agent's HOME and
starts it with the agent runtime's Python (the harness's packages are not there: the loop needs
only the standard library and httpx)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl.types import AgentContext, AgentLaunch

OPTIONS: dict[str, tuple[type, str]] = {
    "max_turns": (int, "model calls before the agent stops (default 60)"),
    "command_timeout": (float, "seconds a shell command may run (default 900)"),
    "output_chars": (int, "characters of tool output the model reads back (default 6000)"),
    "max_tokens": (int, "max output tokens per model call (default 4096)"),
    "temperature": (float, "sampling temperature (default: the backend's)"),
}


def option_flags(options: Mapping[str, Any]) -> list[str]:
    """``{"max_turns": 5}`` -> ``["--max-turns", "5"]``; unknown or mistyped options are errors."""
    flags: list[str] = []
    for key, value in options.items():
        if key not in OPTIONS:
            raise ConfigError(
                f"agent 'react': unknown option {key!r}",
                hint="options: " + "; ".join(f"{k} ({h})" for k, (_, h) in OPTIONS.items()),
            )
        kind, _ = OPTIONS[key]
        try:
            if isinstance(value, bool):
                raise ValueError
            number = kind(value)
        except (TypeError, ValueError):
            raise ConfigError(
                f"agent 'react': option {key}={value!r} is not a {kind.__name__}",
                hint=f"{key}: {OPTIONS[key][1]}",
            ) from None
        if number <= 0 and key != "temperature":
            raise ConfigError(f"agent 'react': option {key} must be positive, got {value!r}")
        flags += ["--" + key.replace("_", "-"), str(number)]
    return flags


class ReactAgent:
    """autorl's own scaffold: a tool-using loop that reaches its model only through the gateway."""

    name = "react"

    def launch(self, ctx: AgentContext) -> AgentLaunch:
        if not ctx.driver or not ctx.gateway_url:
            raise ConfigError(
                "agent 'react' needs a driver LLM",
                hint="add --driver scripted/<script.yaml> (offline), openai/gpt-5.2 or "
                "anthropic/claude-sonnet-4-6 (key in the harness environment); see docs/agents.md",
            )
        trajectory = ctx.home / "react-trajectory.jsonl"
        code = Path(ctx.home) / ".autorl-react"
        shutil.rmtree(code, ignore_errors=True)
        shutil.copytree(
            Path(__file__).resolve().parent,
            code / "autorl_agent_react",
            ignore=shutil.ignore_patterns("__pycache__", "agent.py", "plugin.py"),
        )
        argv = (
            ctx.python,
            "-m",
            "autorl_agent_react.loop",
            "--trajectory",
            str(trajectory),
            *option_flags(ctx.options),
        )
        env = {
            "AUTORL_REACT_TRAJECTORY": str(trajectory),
            "PYTHONPATH": f"{code}:{Path(ctx.workspace) / 'kit'}",
        }
        return AgentLaunch(argv=argv, env=env)
