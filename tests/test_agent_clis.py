"""The five real agent CLIs, at their pinned versions, in real `autorl run`s (integration).

Each run: the tiny model and a tiny gsm8k split; the run's LLM gateway backed by the `scripted`
driver, whose script makes the CLI call its own shell tool once to copy the base model to
`output/ckpt` and submit it to the grading server with the run token, then end. The test checks
the run's records (submission scored, driver calls with token counts in the report), the
trajectory extracted from the CLI's native log at the end of the run, and that no connection
left loopback: each CLI runs under `strace -f -e trace=connect,sendto,sendmsg` (the adapters'
`wrapper` option) and every socket address it used must be 127.0.0.1, ::1 or a Unix socket.

The CLIs are installed once per session, all five at once, into the user cache
(`autorl agent-cli install`); select these tests with `pytest tests/test_agent_clis.py`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from autorl_testing.runs import AUTORL, autorl_run

from autorl.text import markdown_text

pytestmark = pytest.mark.slow

AGENTS = ("codex", "claude-code", "gemini-cli", "opencode", "openhands")

SUBMIT = (
    "import json, os, urllib.request as u; "
    "r = u.Request(os.environ['AUTORL_GRADER_URL'] + '/submit', "
    "data=json.dumps({'model_path': 'output/ckpt', 'wait': True}).encode(), "
    "headers={'Authorization': 'Bearer ' + os.environ['AUTORL_TOKEN'], "
    "'Content-Type': 'application/json'}); print(u.urlopen(r).read().decode())"
)
SHELL = f'cp -rL models/base output/ckpt && python -c "{SUBMIT}"'
DONE = "Submitted output/ckpt. Done."

# the shell tool each CLI offers, and how the script ends the session
SCRIPTS: dict[str, tuple[str, dict[str, Any], Any]] = {
    "claude-code": ("Bash", {"command": SHELL}, DONE),
    "codex": ("exec_command", {"cmd": SHELL}, DONE),
    "gemini-cli": ("run_shell_command", {"command": SHELL}, DONE),
    "opencode": ("bash", {"command": SHELL, "description": "submit the checkpoint"}, DONE),
    "openhands": (
        "terminal",
        {"command": SHELL, "security_risk": "LOW"},
        {"tool_call": {"name": "finish", "arguments": {"message": DONE}}},
    ),
}
LOOPBACK = re.compile(r"^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$")
ADDRESS = re.compile(r'(?:inet_addr|inet_pton\(AF_INET6?,)\s*\(?"([^"]+)"')


@pytest.fixture(scope="session")
def strace_ok() -> bool:
    """Whether strace can trace here (it needs ptrace, which some containers forbid)."""
    if shutil.which("strace") is None:
        return False
    probe = subprocess.run(["strace", "-f", "-qq", "-e", "trace=connect", "true"], check=False)
    return probe.returncode == 0


def foreign_addresses(trace: Path) -> list[str]:
    """Socket addresses in an strace log that are not loopback (Unix sockets are fine)."""
    found = []
    for line in trace.read_text(errors="replace").splitlines():
        for address in ADDRESS.findall(line):
            if not LOOPBACK.match(address):
                found.append(line.strip())
    return found


def write_script(directory: Path, agent: str) -> Path:
    tool, arguments, last = SCRIPTS[agent]
    script = {
        "replies_by": "turn",
        "when_exhausted": "repeat_last",
        "replies": [{"tool_call": {"name": tool, "arguments": arguments}}, last],
    }
    path = directory / f"{agent}.json"
    path.write_text(json.dumps(script, indent=1))
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("agent", AGENTS)
def test_cli_agent_real_run(
    agent: str, installed_clis: dict[str, float], strace_ok: bool, tmp_path: Path
) -> None:
    script = write_script(tmp_path, agent)
    # in the agent's HOME: the only host directory besides the workspace the sandbox shows it
    trace = tmp_path / "runs" / "run" / "home" / "connect.trace"
    options = []
    if strace_ok:
        wrapper = ["strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o", str(trace)]
        options.append(f"wrapper={json.dumps(wrapper)}")
    # this environment's cache, not one under tmp_path: the CLIs are installed there once
    env = {"AUTORL_CACHE": os.environ.get("AUTORL_CACHE"), "TRANSFORMERS_OFFLINE": "1"}
    started = time.monotonic()
    proc = autorl_run(
        tmp_path, "run", task="gsm8k", model="tiny", agent=agent, driver=f"scripted/{script}",
        budget=300, max_submissions=2, task_option=["train_size=20", "eval_size=8"], quiet=True,
        agent_option=options, env=env, timeout=420, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    run_dir = tmp_path / "runs" / "run"
    log = (run_dir / "agent.log").read_text(errors="replace") if run_dir.exists() else ""
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\nagent.log:\n{log[-3000:]}"
    print(f"{agent}: autorl run took {seconds:.1f} s")

    run_info = json.loads((run_dir / "run.json").read_text())
    assert run_info["status"] == "completed"
    assert run_info["end_reason"] == "agent_exit", log[-3000:]
    assert run_info["agent_exit_code"] == 0, log[-3000:]

    # the CLI's shell tool copied the model and submitted it with the run token
    records = read_jsonl(run_dir / "submissions.jsonl")
    scored = [r for r in records if r.get("status") == "scored"]
    assert scored, records
    assert any(r.get("model_path") == "output/ckpt" for r in records), records

    # the report lists the driver calls and their token counts
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    calls = summary["driver_calls"]
    tool = SCRIPTS[agent][0]
    assert calls["calls"] >= 2 and calls["errors"] == 0, calls
    assert calls["input_tokens"] > 0 and calls["output_tokens"] > 0
    assert any(tool in row["tool_calls"] for row in calls["rows"]), calls["rows"]
    report = (run_dir / "report" / "report.md").read_text()
    # agent-written names are Markdown-escaped in the report (exec\\_command shows exec_command)
    assert "## Driver calls" in report and markdown_text(tool) in report

    # the native trajectory, in the common format: written at the end of the run, and again
    # on demand by `autorl agent-cli trajectory`
    trajectory = run_dir / "agent_trajectory.jsonl"
    assert trajectory.is_file() and (run_dir / "agent_native").is_dir()
    collected = trajectory.read_text()
    extracted = subprocess.run(
        [AUTORL, "agent-cli", "trajectory", str(run_dir)], capture_output=True, text=True
    )
    assert extracted.returncode == 0, extracted.stderr
    assert trajectory.read_text() == collected
    events = read_jsonl(trajectory)
    call = next(e for e in events if e["type"] == "tool_call" and e["name"] == tool)
    assert "output/ckpt" in json.dumps(call["arguments"])
    result = next(e for e in events if e["type"] == "tool_result" and e["id"] == call["id"])
    assert '"status"' in result["output"] or "scored" in result["output"], result
    assert any(e["type"] == "turn" for e in events)

    # nothing left loopback
    if strace_ok:
        assert trace.exists() and "connect(" in trace.read_text()
        assert foreign_addresses(trace) == []
    else:
        pytest.skip("strace cannot trace here: network confinement not checked")
