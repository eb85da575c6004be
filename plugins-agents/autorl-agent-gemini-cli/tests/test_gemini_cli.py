"""gemini-cli adapter: settings, flags, environment, and parsing a real chat log."""

from __future__ import annotations

import json
from pathlib import Path

from autorl_agent_cli_common.testing import (
    CliAgentConformance,
    cli_context,
    collected_events,
    launched,
)
from autorl_agent_gemini_cli.agent import GeminiCliAgent

DATA = Path(__file__).parent / "data"


class TestGeminiCliConformance(CliAgentConformance):
    plugin_module = "autorl_agent_gemini_cli.plugin"
    driver = "gemini/gemini-2.5-flash"


def test_api_key_auth_and_settings(tmp_path: Path) -> None:
    argv, env, _ = launched(GeminiCliAgent(), tmp_path, driver="gemini/gemini-2.5-flash")
    assert argv[1] == "-p" and "--yolo" in argv
    assert argv[argv.index("-m") + 1] == "gemini-2.5-flash"
    assert argv[argv.index("--output-format") + 1] == "stream-json"
    assert env["GEMINI_API_KEY"] == "run-token"
    assert env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:6000"
    assert env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    settings = json.loads((tmp_path / "home" / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    assert settings["general"]["enableAutoUpdate"] is False


def test_model_label_has_no_slash(tmp_path: Path) -> None:
    launch = GeminiCliAgent().launch(cli_context(tmp_path, driver="vllm/Qwen/Qwen3-32B"))
    assert launch.argv[list(launch.argv).index("-m") + 1] == "Qwen-Qwen3-32B"


def test_chat_log_becomes_common_events(tmp_path: Path) -> None:
    chat = ".gemini/tmp/workspace/chats/session-x.jsonl"
    events = collected_events(GeminiCliAgent(), tmp_path, DATA / "session-submit.jsonl", chat)
    calls = [e for e in events if e["type"] == "tool_call"]
    assert len(calls) == 1  # records re-written as they grow count once
    assert calls[0]["name"] == "run_shell_command"
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["id"] == calls[0]["id"] and "scored" in result["output"]
    assert [e["turn"] for e in events if e["type"] == "turn"] == [1, 2]
