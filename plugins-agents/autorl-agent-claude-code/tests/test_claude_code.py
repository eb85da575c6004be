"""claude-code adapter: flags, environment, modes, and parsing a real Claude Code session log."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from autorl_agent_claude_code.agent import ClaudeCodeAgent, project_dir_name
from autorl_agent_cli_common.testing import CliAgentConformance, cli_context, launched

from autorl.errors import ConfigError

DATA = Path(__file__).parent / "data"


class TestClaudeCodeConformance(CliAgentConformance):
    plugin_module = "autorl_agent_claude_code.plugin"
    driver = "anthropic/claude-sonnet-4-6"


def test_headless_launch_against_the_gateway(tmp_path: Path) -> None:
    argv, env, _ = launched(ClaudeCodeAgent(), tmp_path, driver="anthropic/claude-sonnet-4-6")
    assert argv[1] == "-p" and "Train the model." in argv[2]
    for flag in ("--dangerously-skip-permissions", "--verbose"):
        assert flag in argv
    assert argv[argv.index("--output-format") + 1] == "stream-json"
    assert argv[argv.index("--model") + 1] == "claude-sonnet-4-6"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:6000"
    assert env["ANTHROPIC_API_KEY"] == "run-token"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["DISABLE_AUTOUPDATER"] == "1"
    assert env["HOME"] == str(tmp_path / "home")


def test_modes_change_the_prompt(tmp_path: Path) -> None:
    prompts = {
        mode: ClaudeCodeAgent().launch(cli_context(tmp_path, mode=mode)).argv[2]
        for mode in ("free", "sft-only", "rl-oriented")
    }
    assert "SFT only" in prompts["sft-only"] and "GRPO" in prompts["rl-oriented"]
    assert "Mode:" not in prompts["free"]
    with pytest.raises(ConfigError, match="mode: Input should be 'free', 'sft-only' or 'rl-or"):
        ClaudeCodeAgent().launch(cli_context(tmp_path, mode="rl-only"))


def test_session_log_becomes_common_events(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    project = tmp_path / "home" / ".claude" / "projects" / project_dir_name(workspace)
    project.mkdir(parents=True)
    shutil.copy(DATA / "session-submit.jsonl", project / "s.jsonl")
    run_dir = tmp_path / "run"
    written = ClaudeCodeAgent().collect_from(tmp_path / "home", workspace, run_dir)
    assert (run_dir / "agent_native" / ".claude" / "projects").is_dir()
    from autorl_agent_cli_common.trajectory import read_trajectory

    events = read_trajectory(written[-1])
    call = next(e for e in events if e["type"] == "tool_call")
    assert call["name"] == "Bash" and "output/ckpt" in call["arguments"]["command"]
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["id"] == call["id"] and result["ok"] and result["name"] == "Bash"
    turns = [e for e in events if e["type"] == "turn"]
    assert len(turns) == 2 and turns[0]["usage"]["input_tokens"] > 0
    assert events[-1]["type"] == "message" and events[-1]["text"] == "Done."
