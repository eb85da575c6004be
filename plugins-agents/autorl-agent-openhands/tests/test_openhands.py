"""openhands adapter: environment, offline git config, and reading a real conversation."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from autorl_agent_cli_common.testing import (
    CliAgentConformance,
    cli_context,
    collected_events,
    launched,
)
from autorl_agent_openhands.agent import MAX_TMUX_DIR, OpenHandsAgent

DATA = Path(__file__).parent / "data"


class TestOpenHandsConformance(CliAgentConformance):
    plugin_module = "autorl_agent_openhands.plugin"


def test_headless_through_litellm(tmp_path: Path) -> None:
    argv, env, ctx = launched(OpenHandsAgent(), tmp_path)
    (tmp_path / "run").mkdir()
    OpenHandsAgent().collect(ctx, tmp_path / "run")  # as a run ends: no tmux dir left in /tmp
    for flag in ("--headless", "--json", "--override-with-envs", "--always-approve"):
        assert flag in argv
    assert "Train the model." in argv[argv.index("-t") + 1]
    assert env["LLM_MODEL"] == "openai/gpt-5.2"
    assert env["LLM_BASE_URL"] == "http://127.0.0.1:6000/v1"
    assert env["LLM_API_KEY"] == "run-token"
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert env["OPENHANDS_WORK_DIR"] == str(ctx.workspace)
    gitconfig = (tmp_path / "home" / ".gitconfig").read_text()
    assert "insteadOf = https://github.com/" in gitconfig


def test_conversation_becomes_common_events(tmp_path: Path) -> None:
    conversation = ".openhands/conversations/c1"
    events = collected_events(OpenHandsAgent(), tmp_path, DATA / "conversation", conversation)
    names = [e["name"] for e in events if e["type"] == "tool_call"]
    assert names == ["terminal", "finish"]
    result = next(e for e in events if e["type"] == "tool_result" and e["name"] == "terminal")
    assert result["ok"] and "scored" in result["output"]
    turns = [e for e in events if e["type"] == "turn"]
    assert len(turns) == 2 and all(t["usage"]["input_tokens"] > 0 for t in turns)


def test_own_tmux_socket_dir_per_run_inside_home() -> None:
    """Each run's tmux server gets its own socket directory, in the run's HOME (which every
    sandbox shows the agent; a host /tmp directory would not exist inside a namespace)."""
    # a root as short as a run directory's: a socket path holds 107 bytes, and pytest's
    # tmp_path (longer still under xdist) would leave no room for HOME
    root = Path(tempfile.mkdtemp(prefix="oh-"))
    try:
        ctx = cli_context(root)
        first = Path(OpenHandsAgent().launch(ctx).env["TMUX_TMPDIR"])
        second = Path(OpenHandsAgent().launch(cli_context(root / "other")).env["TMUX_TMPDIR"])
        assert first.is_dir() and first != second
        assert first.is_relative_to(Path(ctx.home))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_home_too_long_for_a_socket_gets_a_short_dir_removed_after_the_run(
    tmp_path: Path,
) -> None:
    """Under a deep run directory the tmux directory is a short one in /tmp; collecting the
    run's files removes it (they were left in /tmp, one per run, before)."""
    deep = tmp_path / ("d" * 60)
    ctx = cli_context(deep)
    agent = OpenHandsAgent()
    tmux = Path(agent.launch(ctx).env["TMUX_TMPDIR"])
    assert tmux.is_dir() and len(str(tmux)) <= MAX_TMUX_DIR
    assert not tmux.is_relative_to(deep) and (tmux.stat().st_mode & 0o077) == 0
    assert Path(agent.launch(ctx).env["TMUX_TMPDIR"]) == tmux  # the same run, the same dir
    (tmux / "tmux-0").mkdir()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    agent.collect(ctx, run_dir)
    assert not tmux.exists()
    # a real run's files are collected by the run-end observer, from the run directory alone
    tmux = Path(agent.launch(ctx).env["TMUX_TMPDIR"])
    assert tmux.is_dir()
    agent.collect_from(Path(ctx.home), Path(ctx.workspace), run_dir)
    assert not tmux.exists()
