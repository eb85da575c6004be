"""opencode adapter: inline config, prompt file, environment, and reading a real store."""

from __future__ import annotations

import json
from pathlib import Path

from autorl_agent_cli_common.testing import CliAgentConformance, collected_tool_use, launched
from autorl_agent_opencode.agent import OpenCodeAgent

DATA = Path(__file__).parent / "data"


class TestOpenCodeConformance(CliAgentConformance):
    plugin_module = "autorl_agent_opencode.plugin"


def test_inline_provider_config_and_prompt_file(tmp_path: Path) -> None:
    argv, env, ctx = launched(OpenCodeAgent(), tmp_path)
    assert argv[1:4] == ["run", "--format", "json"]
    assert argv[argv.index("--model") + 1] == "autorl/gpt-5.2"
    assert argv[argv.index("--title") + 1] == "autorl"
    config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    provider = config["provider"]["autorl"]
    assert provider["options"]["baseURL"] == "http://127.0.0.1:6000/v1"
    assert provider["options"]["apiKey"] == "{env:AUTORL_GATEWAY_KEY}"
    assert env["AUTORL_GATEWAY_KEY"] == "run-token"
    assert config["autoupdate"] is False and config["permission"]["bash"] == "allow"
    prompt_file = Path(config["instructions"][0])
    assert "Train the model." in prompt_file.read_text()
    assert not prompt_file.is_relative_to(ctx.workspace)
    assert env["PWD"] == str(ctx.workspace)
    assert env["OPENCODE_DISABLE_AUTOUPDATE"] == env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"


def test_store_becomes_common_events(tmp_path: Path) -> None:
    store = ".local/share/opencode/opencode.db"
    native = DATA / "opencode-submit.db"
    call, result, turns = collected_tool_use(OpenCodeAgent(), tmp_path, native, store)
    assert call["name"] == "bash" and "output/ckpt" in call["arguments"]["command"]
    assert result["ok"] and "scored" in result["output"]
    assert len(turns) == 2 and turns[0]["usage"]["input_tokens"] > 0
