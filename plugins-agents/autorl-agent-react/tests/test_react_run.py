"""`autorl run --agent react --driver scripted/...` end to end through the real CLI.

Real pieces only: the tiny model, the gsm8k task (tiny option sizes), the gateway, the grading
server, a real training step, the basic report. The harness environment holds fake provider
keys; the agent must never see them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import autorl_driver_scripted  # noqa: F401
import autorl_model_tiny  # noqa: F401
import autorl_task_gsm8k  # noqa: F401
import pytest
import yaml
from autorl_agent_react import examples
from autorl_agent_react.trajectory import read_trajectory
from autorl_testing.runs import run_cache

pytestmark = pytest.mark.slow  # two real runs: about 2 minutes on a busy 2-core machine


AUTORL = str(Path(sys.executable).parent / "autorl")
SECRETS = {"OPENAI_API_KEY": "sk-fake-harness-key-123", "ANTHROPIC_API_KEY": "sk-ant-fake-456"}
TINY_TASK = ["--task-option", "train_size=20", "--task-option", "eval_size=4"]


def autorl(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **SECRETS, "AUTORL_CACHE": str(run_cache(root)), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [AUTORL, "run", "--task", "gsm8k", "--model", "tiny", "--agent", "react", *args],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("react-e2e")


@pytest.fixture(scope="module")
def full_run(root: Path) -> dict[str, Any]:
    """The shipped example script, with one extra first turn that dumps the agent's env."""
    script = yaml.safe_load(Path(examples.TINY).read_text())
    dump = {"name": "shell", "arguments": {"command": 'env > "$HOME/agent-env.txt"'}}
    script["replies"].insert(0, {"text": "Who am I?", "tool_calls": [dump]})
    (root / "react_env.yaml").write_text(yaml.safe_dump(script))
    proc = autorl(
        root,
        "--driver",
        "scripted/react_env.yaml",  # relative: resolved from the directory autorl runs in
        "--runs-dir",
        "runs",
        "--run-id",
        "full",
        "--budget",
        "300",
        *TINY_TASK,
    )
    return {"proc": proc, "run_dir": root / "runs" / "full"}


def test_react_trains_submits_and_the_report_lists_driver_calls(full_run: dict) -> None:
    proc, run_dir = full_run["proc"], full_run["run_dir"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    events = read_trajectory(run_dir / "home" / "react-trajectory.jsonl")
    results = {e["name"]: e for e in events if e["type"] == "tool_result"}
    assert results["shell"]["ok"] and "saved output/v1" in results["shell"]["output"]
    assert results["submit"]["ok"] and '"status":"scored"' in results["submit"]["output"]
    assert events[-1] == {**events[-1], "type": "end", "reason": "model_stopped"}
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert [s["status"] for s in summary["submissions"]] == ["scored"]
    calls = summary["driver_calls"]
    assert calls["calls"] == 7 and calls["errors"] == 0 and calls["scripted"] is True
    assert all(r["input_tokens"] > 0 and r["output_tokens"] > 0 for r in calls["rows"])
    assert calls["total_tokens"] == sum(
        r["input_tokens"] + r["output_tokens"] for r in calls["rows"]
    )
    assert [r["tool_calls"] for r in calls["rows"]][-3:] == [["submit"], ["check_budget"], []]
    report = (run_dir / "report" / "report.md").read_text()
    assert "## Driver calls" in report and f"**{calls['total_tokens']} tokens**" in report
    run_info = json.loads((run_dir / "run.json").read_text())
    assert run_info["end_reason"] == "agent_exit"
    assert run_info["driver_usage"]["tokens"] == calls["total_tokens"]


def test_the_agent_sees_the_gateway_never_a_provider_key(full_run: dict) -> None:
    run_dir: Path = full_run["run_dir"]
    env_lines = (run_dir / "home" / "agent-env.txt").read_text().splitlines()
    agent_env = dict(line.split("=", 1) for line in env_lines if "=" in line)
    assert agent_env["AUTORL_GATEWAY_URL"].startswith("http://127.0.0.1:")
    assert not {k for k in agent_env if k.endswith("_API_KEY")}
    for top in (run_dir / "workspace", run_dir / "home"):
        for path in top.rglob("*"):
            if path.is_file() and not path.is_symlink() and path.stat().st_size < 5_000_000:
                blob = path.read_bytes()
                for secret in SECRETS.values():
                    assert secret.encode() not in blob, path
    log = (run_dir / "driver_calls.jsonl").read_text()  # everything the model was sent
    assert all(secret not in log for secret in SECRETS.values())


def test_token_budget_ends_the_run_with_a_clear_reason(root: Path, full_run: dict) -> None:
    """budget.max_tokens in a config: the 3rd call is refused, the agent stops, the run says why."""
    config = {
        "driver": f"scripted/{examples.TINY}",
        "budget": {"wall_seconds": 300, "max_tokens": 3000},
        "task_options": {"train_size": 20, "eval_size": 4},
    }
    (root / "budget.yaml").write_text(yaml.safe_dump(config))
    proc = autorl(root, "--config", "budget.yaml", "--runs-dir", "runs", "--run-id", "budget")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = root / "runs" / "budget"
    run_info = json.loads((run_dir / "run.json").read_text())
    assert run_info["end_reason"] == "token_budget"
    usage = run_info["driver_usage"]
    assert usage["exhausted"] == "token_budget" and usage["refused"] == 1 and usage["calls"] == 2
    assert usage["tokens"] >= 3000
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    exhausted = [e for e in events if e["event"] == "driver_budget_exhausted"]
    assert len(exhausted) == 1 and exhausted[0]["reason"] == "token_budget"
    end = read_trajectory(run_dir / "home" / "react-trajectory.jsonl")[-1]
    assert end["reason"] == "driver_budget" and "token budget is spent" in end["detail"]
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["end_reason"] == "token_budget" and summary["driver_calls"]["refused"] == 1
    report = (run_dir / "report" / "report.md").read_text()
    assert "driver token budget was spent" in report and "1 later calls were refused" in report


def test_an_upstream_outage_ends_the_run_with_a_reason_that_names_it(root: Path) -> None:
    """The driver's provider answers one call after a retry, then only 503s: the run ends as
    ``driver_unavailable`` in the terminal, the event log and the report, with the retries and
    failures counted and the upstream's last error quoted."""
    from autorl_llm.testing import Answer, Fail, FakeProvider

    shell = ("shell", {"command": "ls"})
    with FakeProvider(default=Fail(503, message="upstream overloaded, try later")) as fake:
        fake.enqueue(Fail(500), Answer("looking around", tool_calls=(shell,)))
        proc = autorl(
            root,
            "--driver",
            "openai/gpt-test",
            "--driver-option",
            f"base_url={fake.openai_base_url}",
            "--driver-option",
            "max_attempts=2",
            "--driver-option",
            "initial_delay_s=0",
            "--runs-dir",
            "runs",
            "--run-id",
            "outage",
            "--budget",
            "300",
            *TINY_TASK,
        )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # a provider that stayed down is the harness's side failing, not an agent result
    assert "ended by infra_error" in proc.stdout
    assert "upstream was down when the agent stopped" in proc.stdout
    assert "upstream overloaded" in proc.stdout
    run_dir = root / "runs" / "outage"
    run_info = json.loads((run_dir / "run.json").read_text())
    assert run_info["end_reason"] == "infra_error"
    assert run_info["infra_cause"].startswith("driver_unavailable")
    health = run_info["driver_health"]
    assert health["down"] and health["answered"] == 1 and health["failed"] >= 1
    assert health["retried_calls"] == 1 and "upstream overloaded" in health["last_error"]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    names = [e["event"] for e in events]
    assert names.count("driver_call_retried") == 1
    assert names.count("driver_call_failed") == health["failed"]
    assert "driver_unavailable" in names
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    calls = summary["driver_calls"]
    assert summary["end_reason"] == "infra_error"
    assert summary["infra_cause"].startswith("driver_unavailable")
    assert calls["calls"] == 1 and calls["errors"] == health["failed"]
    assert calls["retries"] == health["retries"] >= 1 + health["failed"]
    report = (run_dir / "report" / "report.md").read_text()
    assert "not an agent result" in report and "Cause: driver\\_unavailable" in report
    assert "**Upstream health**" in report and "upstream overloaded" in report
