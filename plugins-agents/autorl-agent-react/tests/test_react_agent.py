"""The react agent's launch, options, tools, trajectory, and its loop against a real gateway."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from autorl_agent_react import examples
from autorl_agent_react.agent import ReactAgent, option_flags
from autorl_agent_react.tools import TOOL_SPECS, Tools, truncate
from autorl_agent_react.trajectory import TrajectoryWriter, read_trajectory
from autorl_llm.drivers import DriverCallLog, open_driver
from autorl_llm.gateway import Gateway
from autorl_testing import agent_context, conformance

from autorl.errors import ConfigError
from autorl.types import AgentContext

TOKEN = "run-token-react"


def context(
    tmp_path: Path, driver: str | None = "scripted/x.yaml", **options: object
) -> AgentContext:
    return agent_context(tmp_path, token=TOKEN, driver=driver, options=options)


class TestReactConformance(conformance.AgentConformance):
    plugin_module = "autorl_agent_react.plugin"
    driver = "scripted/x.yaml"


def test_launch_runs_the_loop_with_the_harness_python(tmp_path: Path) -> None:
    ctx = context(tmp_path, max_turns=5, temperature=0)
    launch = ReactAgent().launch(ctx)
    assert launch.argv[:3] == (sys.executable, "-m", "autorl_agent_react.loop")
    assert launch.argv[3:5] == ("--trajectory", str(ctx.home / "react-trajectory.jsonl"))
    assert launch.argv[5:] == ("--max-turns", "5", "--temperature", "0.0")
    assert not any("KEY" in k for k in launch.env)  # only the harness's AUTORL_* variables


def test_react_needs_a_driver(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs a driver") as info:
        ReactAgent().launch(context(tmp_path, driver=None))
    assert "--driver scripted/" in str(info.value.hint)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_turn": 3}, r"unknown option 'max_turn' \(did you mean 'max_turns'\?\)"),
        ({"max_turns": "many"}, "max_turns: Input should be a valid integer"),
        ({"max_turns": True}, "max_turns: Input should be a valid integer"),
        ({"command_timeout": -1}, "command_timeout: Input should be greater than 0"),
    ],
)
def test_bad_options_are_config_errors(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        option_flags(options)


def tools_in(tmp_path: Path, **kw: object) -> Tools:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return Tools(
        workspace=tmp_path,
        grader_url="http://127.0.0.1:9",
        gateway_url="http://127.0.0.1:9",
        token=TOKEN,
        **kw,
    )


def test_shell_runs_in_the_workspace_and_reports_the_exit_code(tmp_path: Path) -> None:
    tools = tools_in(tmp_path)
    ok, out = tools.run("shell", {"command": "pwd; echo oops >&2; exit 3"})
    assert not ok and out.startswith("exit code 3") and str(tmp_path) in out and "oops" in out
    assert tools.run("write_file", {"path": "code/a.py", "content": "print(1)\n"})[0]
    assert tools.run("shell", {"command": "python3 code/a.py"}) == (True, "exit code 0\n1\n")
    assert tools.run("read_file", {"path": "code/a.py"}) == (True, "print(1)\n")


def test_shell_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    tools = tools_in(tmp_path, command_timeout_s=1.0)
    started = time.monotonic()
    ok, out = tools.run("shell", {"command": "sleep 30 & echo $! > child.pid; sleep 30"})
    assert not ok and "timed out after 1 s" in out
    assert time.monotonic() - started < 10
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.2)
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(child)], capture_output=True, text=True)
    assert state.stdout.strip()[:1] in ("", "Z"), "the background child survived the timeout"


def test_tool_output_keeps_head_and_tail(tmp_path: Path) -> None:
    tools = tools_in(tmp_path, output_chars=100)
    ok, out = tools.run("shell", {"command": "seq 1 10000"})
    assert ok and out.startswith("exit code 0\n1\n2") and out.endswith("9999\n10000\n")
    assert "characters cut" in out and len(out) < 200
    assert truncate("short", 100) == "short"


def test_bad_tool_calls_are_answers_not_crashes(tmp_path: Path) -> None:
    tools = tools_in(tmp_path)
    ok, out = tools.run("rm_rf", {})
    assert not ok and "unknown tool 'rm_rf'" in out
    assert "bad arguments" in tools.run("shell", {"cmd": "ls"})[1]
    ok, out = tools.run("submit", {"model_path": "output/v1"})  # nothing listens on port 9
    assert not ok and "submit failed" in out
    assert {t["function"]["name"] for t in TOOL_SPECS} == set(tools.handlers)


def test_trajectory_reader_checks_each_event(tmp_path: Path) -> None:
    log = TrajectoryWriter(tmp_path / "t.jsonl")
    log.write("message", role="user", text="hi")
    log.turn = 1
    log.write("tool_call", id="c1", name="shell", arguments={"command": "ls"})
    events = read_trajectory(log.path)
    assert [(e["type"], e["turn"], e["v"]) for e in events] == [
        ("message", 0, 1),
        ("tool_call", 1, 1),
    ]
    with log.path.open("a") as fh:
        fh.write(json.dumps({"type": "tool_result", "id": "c1"}) + "\n")
    with pytest.raises(ValueError, match=r"t.jsonl:3: bad 'tool_result' event"):
        read_trajectory(log.path)


def test_loop_stops_when_the_gateway_refuses_for_budget(tmp_path: Path) -> None:
    """The real loop process, a real gateway with a token cap: it ends with driver_budget."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "description.md").write_text("Train a model.\n")
    driver = open_driver(f"scripted/{examples.TINY}")
    with Gateway(driver, token=TOKEN, log_path=tmp_path / "calls.jsonl", max_tokens=50) as gw:
        env = {
            "PATH": "/usr/bin:/bin",
            "AUTORL_WORKSPACE": str(workspace),
            "AUTORL_GATEWAY_URL": gw.url,
            "AUTORL_GRADER_URL": "http://127.0.0.1:9",  # no grader: check_budget reports failure
            "AUTORL_TOKEN": TOKEN,
            "AUTORL_DRIVER": driver.driver_name,
        }
        trajectory = tmp_path / "trajectory.jsonl"
        proc = subprocess.run(
            [sys.executable, "-m", "autorl_agent_react.loop", "--trajectory", str(trajectory)],
            env=env,
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    assert "react agent ended: driver_budget" in proc.stderr
    events = read_trajectory(trajectory)
    assert [e["type"] for e in events[-3:]] == ["tool_result", "turn", "end"]
    end = events[-1]
    assert end["type"] == "end" and end["reason"] == "driver_budget"
    assert "HTTP 403" in end["detail"] and "token budget is spent" in end["detail"]
    first_call = next(e for e in events if e["type"] == "tool_call")
    assert first_call["name"] == "shell"  # turn 1 was served, turn 2 refused
    assert [
        r.get("error", {}).get("type") for r in DriverCallLog.read(tmp_path / "calls.jsonl")
    ] == [
        None,
        "BudgetRefused",
    ]


def test_a_run_without_a_driver_fails_before_any_work(tmp_path: Path) -> None:
    """The engine reads the agent spec's ``driver: True``: no baseline is computed for nothing."""
    from autorl_runner.run import Run

    from autorl.config import RunConfig

    run = Run(RunConfig(agent="react", model="tiny", runs_dir=tmp_path / "runs"), quiet=True)
    with pytest.raises(ConfigError, match="agent 'react' needs a driver LLM"):
        run.execute()
    assert not (tmp_path / "runs").exists()
