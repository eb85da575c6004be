"""codex adapter: the custom provider, flags, environment, and parsing a real rollout."""

from __future__ import annotations

from pathlib import Path

from autorl_agent_cli_common.testing import CliAgentConformance, collected_tool_use, launched
from autorl_agent_codex.agent import CodexAgent

DATA = Path(__file__).parent / "data"


class TestCodexConformance(CliAgentConformance):
    plugin_module = "autorl_agent_codex.plugin"


def test_exec_through_a_custom_provider(tmp_path: Path) -> None:
    argv, env, _ = launched(CodexAgent(), tmp_path)
    assert argv[1:3] == ["exec", "--json"]
    assert "--dangerously-bypass-approvals-and-sandbox" in argv
    assert "--skip-git-repo-check" in argv
    configs = [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]
    assert 'model="gpt-5.2"' in configs and 'model_provider="autorl"' in configs
    provider = next(c for c in configs if c.startswith("model_providers.autorl="))
    assert '"http://127.0.0.1:6000/v1"' in provider and 'wire_api="responses"' in provider
    assert 'env_key="AUTORL_GATEWAY_KEY"' in provider
    assert env["AUTORL_GATEWAY_KEY"] == "run-token"
    assert env["CODEX_HOME"] == str(tmp_path / "home" / ".codex")
    assert "Train the model." in argv[-1]


def test_rollout_becomes_common_events(tmp_path: Path) -> None:
    rollout = ".codex/sessions/2026/11/23/rollout-x.jsonl"
    native = DATA / "rollout-submit.jsonl"
    call, result, turns = collected_tool_use(CodexAgent(), tmp_path, native, rollout)
    assert call["name"] == "exec_command" and "output/ckpt" in call["arguments"]["cmd"]
    assert "scored" in result["output"]
    assert len(turns) == 2 and all(t["usage"]["input_tokens"] > 0 for t in turns)
