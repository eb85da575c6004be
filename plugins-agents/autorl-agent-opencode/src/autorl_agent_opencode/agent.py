"""The ``opencode`` agent: OpenCode (``opencode run``) against the run's gateway.

The gateway is declared as an OpenAI-compatible provider in ``OPENCODE_CONFIG_CONTENT``; the
models catalogue fetch and auto-update are off. OpenCode takes its working directory from
``$PWD``, not the process's cwd, so the adapter sets it. See ``docs/agents/opencode.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

from autorl_agent_cli_common.adapter import CliAgent
from autorl_agent_cli_common.install import NpmTool
from autorl_agent_cli_common.trajectory import TrajectoryEvent

from autorl.types import AgentContext
from autorl_agent_opencode.storage import parse_database

VERSION = "1.18.33"
TOOL = NpmTool(name="opencode", package="opencode-ai", version=VERSION, binary="opencode")
PROVIDER = "autorl"
KEY_VAR = "AUTORL_GATEWAY_KEY"


PROMPT_FILE = "autorl-prompt.md"
MESSAGE = "Carry out the task in your instructions (autorl-prompt.md), working in this directory."


def opencode_config(gateway: str, model: str, prompt_file: Path) -> dict:
    """The whole configuration, passed inline so no file in the workspace can change it."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "autorl gateway",
                "options": {"baseURL": f"{gateway}/v1", "apiKey": f"{{env:{KEY_VAR}}}"},
                "models": {model: {"name": model, "tool_call": True}},
            }
        },
        "model": f"{PROVIDER}/{model}",
        "small_model": f"{PROVIDER}/{model}",
        "instructions": [str(prompt_file)],
        "autoupdate": False,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
    }


class OpenCodeAgent(CliAgent):
    """``opencode run --format json`` with the gateway as its only provider."""

    name = "opencode"
    tool = TOOL
    ARGV = (
        "run",
        "--format",
        "json",
        "--model",
        f"{PROVIDER}/{{model}}",
        "--title",
        "autorl",
        MESSAGE,
    )
    ENV = {
        KEY_VAR: "{token}",
        "OPENCODE_CONFIG_CONTENT": "{config}",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "PWD": "{workspace}",
    }

    def prompt_file(self, ctx: AgentContext) -> Path:
        return Path(ctx.home) / ".config" / "autorl" / PROMPT_FILE

    def fields(self, ctx: AgentContext, gateway: str, model: str, prompt: str) -> dict[str, str]:
        # `opencode run` re-quotes a message with spaces (and escapes its quotes), which would
        # alter code examples; the prompt goes in an instructions file instead.
        prompt_file = self.prompt_file(ctx)
        prompt_file.parent.mkdir(parents=True, exist_ok=True)
        prompt_file.write_text(prompt)
        config = json.dumps(opencode_config(gateway, model, prompt_file))
        return {**super().fields(ctx, gateway, model, prompt), "config": config}

    def native_files(self, home: Path, workspace: Path) -> list[Path]:
        data = home / ".local" / "share" / "opencode"
        return sorted(p for p in data.glob("opencode.db*") if p.is_file())

    def parse(self, home: Path, workspace: Path) -> list[TrajectoryEvent]:
        database = home / ".local" / "share" / "opencode" / "opencode.db"
        return parse_database(database) if database.is_file() else []
