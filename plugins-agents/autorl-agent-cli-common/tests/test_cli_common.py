"""The shared pieces of the CLI adapters: install bookkeeping, prompt, options, trajectory."""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from autorl_agent_cli_common.adapter import (
    REFUSING_PROXY,
    CliAgent,
    model_name,
)
from autorl_agent_cli_common.install import MARKER, AgentTool, find_python
from autorl_agent_cli_common.prompt import build_prompt, workspace_listing
from autorl_agent_cli_common.trajectory import TrajectoryEvent, to_lines
from autorl_testing import agent_context

from autorl.errors import ConfigError
from autorl.types import AgentContext


@dataclass(frozen=True)
class ScriptTool(AgentTool):
    """A 'CLI' installed by writing a shell script (slowly, to exercise the lock)."""

    delay: float = 0.0

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    def executable(self) -> Path:
        return self.prefix / "bin" / self.binary

    def _install_into(self, prefix: Path, log) -> None:
        (prefix / "bin").mkdir()
        time.sleep(self.delay)
        count = prefix.parent / f"{self.name}.installs"
        count.write_text(str(int(count.read_text() or 0) + 1) if count.exists() else "1")
        script = self.executable()
        script.write_text("#!/bin/sh\necho installed\n")
        script.chmod(0o755)


def _ensure(cache: str, delay: float) -> str:
    import os

    os.environ["AUTORL_CACHE"] = cache
    tool = ScriptTool(name="demo", package="demo", version="1", binary="demo", delay=delay)
    return str(tool.ensure(log=lambda m: None))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AUTORL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_install_once_and_marker(cache: Path) -> None:
    tool = ScriptTool(name="demo", package="demo", version="1", binary="demo")
    assert not tool.is_installed()
    path = tool.ensure(log=lambda m: None)
    assert path.is_file() and tool.is_installed()
    assert (tool.prefix / MARKER).read_text().strip() == "demo==1"
    tool.ensure(log=lambda m: None)
    assert (cache / "agents" / "demo.installs").read_text() == "1"


def test_unfinished_install_is_redone(cache: Path) -> None:
    tool = ScriptTool(name="demo", package="demo", version="1", binary="demo")
    (tool.prefix / "bin").mkdir(parents=True)  # a crashed install: no marker
    messages: list[str] = []
    tool.ensure(log=messages.append)
    assert tool.is_installed()
    assert any("unfinished" in m for m in messages)


def test_parallel_installs_wait_for_one(cache: Path) -> None:
    # fork: the children run this module's _ensure as it is (spawn would import the test
    # module by the name pytest's importlib mode gave it, which no child can import: a hang)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(3) as pool:
        paths = pool.starmap(_ensure, [(str(cache), 1.0)] * 3)
    assert len(set(paths)) == 1
    assert (cache / "agents" / "demo.installs").read_text() == "1"


def test_find_python_gives_312_or_says_how(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTORL_PYTHON312", sys.executable)
    try:
        found = find_python()
    except ConfigError as exc:
        assert "3.12" in str(exc) and "AUTORL_PYTHON312" in str(exc)
        return
    import subprocess

    out = subprocess.run(
        [found, "-c", "import sys; print(sys.version_info[:2])"], text=True, capture_output=True
    ).stdout
    assert out.strip() == "(3, 12)"


PROMPTED = {
    "description": "Solve grade-school math.",
    "instructions": "# Instructions\nSubmit with POST /submit.",
    "budget_seconds": 600,
    "max_submissions": 4,
    "driver": "openai/gpt-5.2",
    "gateway_url": "http://127.0.0.1:6000/",
}
"""What the prompt tests look for: the task's text, the rules, the budget."""


def _context(tmp_path: Path, **overrides: object) -> AgentContext:
    ctx = agent_context(tmp_path, **{**PROMPTED, **overrides})
    (ctx.workspace / "models" / "base").mkdir(exist_ok=True)
    (ctx.workspace / "data" / "train.jsonl").write_text("{}\n")
    return ctx


def test_prompt_has_task_rules_listing_and_budget(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    prompt = build_prompt(ctx, "## Mode: test")
    for expected in (
        "Solve grade-school math.",
        "POST /submit",
        "10.0 minutes",
        "at most 4 submissions",
        "$AUTORL_TOKEN",
        "train.jsonl",
        "models/",
        "## Mode: test",
        str(ctx.workspace),
    ):
        assert expected in prompt, expected
    assert "run-token" not in prompt


def test_listing_is_bounded(tmp_path: Path) -> None:
    for i in range(100):
        (tmp_path / f"f{i:03d}.txt").write_text("")
    listing = workspace_listing(tmp_path, limit=10)
    assert listing.count("\n") == 10 and listing.endswith("...")


def test_model_name(tmp_path: Path) -> None:
    def ctx(driver: str, **options: object) -> AgentContext:
        return _context(tmp_path, driver=driver, options=options)

    assert model_name(ctx("openai/gpt-5.2")) == "gpt-5.2"
    assert model_name(ctx("vllm/Qwen/Qwen3-32B")) == "Qwen-Qwen3-32B"
    assert model_name(ctx("scripted/tests/scripts/codex.yaml")) == "codex"
    assert model_name(ctx("openai/gpt-5.2", model="custom")) == "custom"
    with pytest.raises(ConfigError, match="model: String should have at least 1 character"):
        CliAgent().check_options({"model": ""})


class EchoAgent(CliAgent):
    """A CLI adapter whose 'CLI' is /bin/echo: launch logic only."""

    name = "echo"
    tool = ScriptTool(name="echo", package="echo", version="1", binary="echo")

    def command(self, ctx, executable, gateway, model, prompt):
        return [executable, "--model", model, prompt], {"KEY": ctx.token, "URL": gateway}


def test_launch_env_and_options(tmp_path: Path) -> None:
    ctx = _context(
        tmp_path, options={"executable": "echo", "wrapper": ["nice"], "extra_args": ["-x"]}
    )
    launch = EchoAgent().launch(ctx)
    assert launch.argv[0] == "nice" and launch.argv[1].endswith("echo")
    assert launch.argv[-1] == "-x" and "gpt-5.2" in launch.argv
    env = dict(launch.env)
    assert env["KEY"] == "run-token" and env["URL"] == "http://127.0.0.1:6000"
    assert env["HOME"] == str(tmp_path / "home")
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert env["HTTPS_PROXY"] == env["https_proxy"] == REFUSING_PROXY
    assert "127.0.0.1" in env["NO_PROXY"]
    opened = EchoAgent().launch(
        _context(tmp_path, options={"executable": "echo", "allow_network": True})
    )
    assert "HTTPS_PROXY" not in opened.env


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"gateway_url": None, "driver": None}, "has no driver"),
        ({"options": {"colour": "red"}}, "unknown option"),
        ({"options": {"wrapper": "strace -f"}}, "wrapper: Input should be a valid list"),
        ({"options": {"executable": "/no/such/cli"}}, "not found"),
    ],
)
def test_bad_input_is_a_config_error(tmp_path: Path, overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        EchoAgent().launch(_context(tmp_path, **overrides))
    assert info.value.hint


def test_common_lines_fill_turns_and_tool_names() -> None:
    events = [
        TrajectoryEvent("message", role="user", text="go"),
        TrajectoryEvent("turn", index=1, usage={"input_tokens": 5, "output_tokens": 1}),
        TrajectoryEvent("tool_call", name="Bash", call_id="c1", arguments={"command": "ls"}),
        TrajectoryEvent("tool_result", call_id="c1", output="x" * 30_000, is_error=False),
        TrajectoryEvent("turn"),
        TrajectoryEvent("tool_call", name="raw", call_id="c2", arguments="ls -l"),
    ]
    lines = to_lines(events, "demo")
    assert [line["turn"] for line in lines] == [0, 1, 1, 1, 2, 2]
    assert all(line["v"] == 1 and line["agent"] == "demo" for line in lines)
    assert lines[3]["name"] == "Bash" and lines[3]["ok"] is True
    assert len(lines[3]["output"]) < 21_000
    assert lines[5]["arguments"] == {"input": "ls -l"}
    json.dumps(lines)


def test_agent_cli_command_lists_and_refuses_non_runs(tmp_path: Path) -> None:
    import subprocess

    autorl = str(Path(sys.executable).parent / "autorl")
    listed = subprocess.run([autorl, "agent-cli", "list", "--json"], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    rows = {row["agent"]: row for row in json.loads(listed.stdout)}
    installed = {"claude-code", "codex", "gemini-cli", "opencode", "openhands"} & set(rows)
    assert installed, rows
    for row in rows.values():
        assert row["package"] and isinstance(row["installed"], bool)
    refused = subprocess.run(
        [autorl, "agent-cli", "trajectory", str(tmp_path)], capture_output=True, text=True
    )
    assert refused.returncode == 2 and "not a run directory" in refused.stderr
