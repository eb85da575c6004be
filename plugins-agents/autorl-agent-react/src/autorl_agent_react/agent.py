"""The ``react`` agent's adapter: checks its options, copies the loop into the agent's HOME and
starts it with the agent runtime's Python (the harness's packages are not there: the loop needs
only the standard library and httpx)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, PositiveFloat

from autorl.errors import ConfigError
from autorl.options import OptionsModel, PositiveInt, parse_options
from autorl.types import AgentContext, AgentLaunch


class Options(OptionsModel):
    """``[agent_options]`` of the react agent: each becomes the loop's ``--flag``."""

    max_turns: PositiveInt = Field(60, description="model calls before the agent stops")
    command_timeout: PositiveFloat = Field(900, description="seconds a shell command may run")
    output_chars: PositiveInt = Field(6000, description="characters of tool output read back")
    max_tokens: PositiveInt = Field(4096, description="max output tokens per model call")
    temperature: float | None = Field(None, ge=0, description="sampling temperature")


def option_flags(options: Mapping[str, Any]) -> list[str]:
    """``{"max_turns": 5}`` -> ``["--max-turns", "5"]``; unknown or mistyped options are errors."""
    parsed = parse_options(Options, options, who="agent 'react'")
    flags: list[str] = []
    for key, value in parsed.model_dump(exclude_unset=True).items():
        if value is not None:
            flags += ["--" + key.replace("_", "-"), str(value)]
    return flags


class ReactAgent:
    """autorl's own scaffold: a tool-using loop that reaches its model only through the gateway."""

    Options = Options
    """Its options model: a campaign checks them before any run starts."""

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
