"""The ``claude-code`` agent: Claude Code headless (``claude -p``) against the run's gateway.

Flags, environment and pitfalls are measured in ``docs/agents/claude-code.md``. The paper ran
Claude Code in three modes that differ only in what the prompt asks for; ``[agent_options]
mode`` picks one.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from autorl_agent_cli_common.adapter import CliAgent, CommonOptions
from autorl_agent_cli_common.install import NpmTool
from autorl_agent_cli_common.trajectory import (
    TrajectoryEvent,
    read_jsonl_lenient,
    text_of,
    tool_call,
    tool_result,
    turn_event,
)
from pydantic import Field

from autorl.types import AgentContext

VERSION = "2.1.330"
TOOL = NpmTool(
    name="claude-code", package="@anthropic-ai/claude-code", version=VERSION, binary="claude"
)

MODES = {
    "free": "",
    "sft-only": (
        "## Mode: SFT only\n\nUse supervised fine-tuning only (full fine-tuning or LoRA on "
        "demonstrations you build from the training data). Do not use reinforcement learning "
        "(no GRPO, PPO, DPO or online rollouts)."
    ),
    "rl-oriented": (
        "## Mode: RL-oriented\n\nYour pipeline must include reinforcement learning: use the "
        "train-time reward (see `kit/`) with GRPO or another online RL method, optionally after "
        "a short supervised warm-up. Report which RL method produced each submission."
    ),
}


def project_dir_name(cwd: Path) -> str:
    """How Claude Code names a project's folder under ``~/.claude/projects``."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


class Options(CommonOptions):
    mode: Literal["free", "sft-only", "rl-oriented"] = Field(
        "free", description="the paper's prompt mode"
    )


class ClaudeCodeAgent(CliAgent):
    """Claude Code ``-p`` with ``stream-json`` output, permissions skipped, traffic off."""

    name = "claude-code"
    tool = TOOL
    Options = Options
    ARGV = (
        "-p",
        "{prompt}",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
        "--model",
        "{model}",
    )
    ENV = {
        "ANTHROPIC_BASE_URL": "{gateway}",
        "ANTHROPIC_API_KEY": "{token}",
        # every model slot to the run's model: side calls (titles, summaries) stay metered
        "ANTHROPIC_MODEL": "{model}",
        "ANTHROPIC_SMALL_FAST_MODEL": "{model}",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "{model}",
        "ANTHROPIC_DEFAULT_SONNET_MODEL": "{model}",
        "ANTHROPIC_DEFAULT_OPUS_MODEL": "{model}",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
    }

    def mode(self, ctx: AgentContext) -> str:
        return self.check_options(ctx.options).mode

    def prompt_extra(self, ctx: AgentContext) -> str:
        return MODES[self.mode(ctx)]

    def command(
        self, ctx: AgentContext, executable: str, gateway: str, model: str, prompt: str
    ) -> tuple[list[str], dict[str, str]]:
        argv, env = super().command(ctx, executable, gateway, model, prompt)
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # else --dangerously-skip-permissions exits 1 under root
        return argv, env

    def native_files(self, home: Path, workspace: Path) -> list[Path]:
        projects = home / ".claude" / "projects"
        exact = projects / project_dir_name(workspace)
        found = sorted(exact.glob("*.jsonl")) if exact.is_dir() else []
        return found or sorted(projects.glob("*/*.jsonl"))

    def parse(self, home: Path, workspace: Path) -> list[TrajectoryEvent]:
        return parse_sessions(self.native_files(home, workspace))


def parse_sessions(files: list[Path]) -> list[TrajectoryEvent]:
    """Claude Code session JSON lines: ``assistant`` rows hold text and ``tool_use`` blocks,
    ``user`` rows hold the prompt or ``tool_result`` blocks."""
    events: list[TrajectoryEvent] = []
    turn = 0
    last_id = None
    for path in files:
        for row in read_jsonl_lenient(path):
            kind = row.get("type")
            message = row.get("message") or {}
            when = row.get("timestamp")
            content = message.get("content")
            if kind == "assistant":
                usage = message.get("usage") or {}
                if message.get("id") is None or message.get("id") != last_id:
                    turn += 1  # one API answer may be logged as several rows, one per block
                    last_id = message.get("id")
                    events.append(
                        turn_event(
                            turn,
                            message.get("model"),
                            when,
                            usage.get("input_tokens"),
                            usage.get("output_tokens"),
                        )
                    )
                for block in content if isinstance(content, list) else [content]:
                    if isinstance(block, str) or (block or {}).get("type") == "text":
                        text = block if isinstance(block, str) else block.get("text", "")
                        if text:
                            events.append(
                                TrajectoryEvent("message", role="assistant", text=text, time=when)
                            )
                    elif block.get("type") == "tool_use":
                        events.append(
                            tool_call(block.get("name"), block.get("id"), block.get("input"), when)
                        )
            elif kind == "user":
                blocks = content if isinstance(content, list) else [content]
                for block in blocks:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        output, failed = text_of(block.get("content")), bool(block.get("is_error"))
                        events.append(tool_result(block.get("tool_use_id"), output, when, failed))
                    elif block:
                        events.append(
                            TrajectoryEvent("message", role="user", text=text_of(block), time=when)
                        )
    return events
