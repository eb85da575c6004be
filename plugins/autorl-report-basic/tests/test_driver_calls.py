"""The report's driver-call rows, from a call log written by a real gateway run."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from autorl_llm.drivers import open_driver
from autorl_llm.gateway import Gateway
from autorl_records import driver_call_summary
from autorl_report_basic.report import BasicReport

from .test_basic_report import write_run

TOKEN = "t0ken"


def gateway_session(run_dir: Path) -> dict:
    """Three chat calls through a gateway capped at 60 tokens: two served, one refused."""
    script = {
        "replies": [
            {"text": "ok", "tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]},
            "word " * 60,
        ],
        "when_exhausted": "repeat_last",
    }
    driver = open_driver("scripted/demo", script=script)
    with Gateway(driver, token=TOKEN, log_path=run_dir / "driver_calls.jsonl", max_tokens=60) as gw:
        for _ in range(3):
            httpx.post(
                f"{gw.url}/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "go"}]},
                headers={"authorization": f"Bearer {TOKEN}"},
            )
        return gw.budget.spend()


def test_driver_calls_are_summarised_and_rendered(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, [], driver="scripted/demo")
    usage = gateway_session(run_dir)
    run_json = run_dir / "run.json"
    run_json.write_text(
        json.dumps(
            {
                **json.loads(run_json.read_text()),
                "end_reason": "token_budget",
                "driver_usage": usage,
            }
        )
    )
    BasicReport().render(run_dir, run_dir / "report")
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    calls = summary["driver_calls"]
    assert (calls["calls"], calls["errors"], calls["refused"]) == (2, 0, 1)
    assert calls["calls"] == usage["calls"]  # the report and the gateway's budget agree
    assert calls["total_tokens"] == usage["tokens"] and calls["total_tokens"] >= 60
    assert calls["scripted"] is True and calls["cost_usd"] == 0.0
    assert [r["tool_calls"] for r in calls["rows"]] == [["shell"], [], []]
    assert [r["error"] for r in calls["rows"]] == [None, None, "BudgetRefused"]
    assert calls["budget"]["exhausted"] == "token_budget"
    report = (run_dir / "report" / "report.md").read_text()
    section = report.split("## Driver calls", 1)[1].split("\n## ", 1)[0]
    assert (
        f"**{calls['total_tokens']} tokens**" in section and "driver budget: 60 tokens" in section
    )
    assert "1 later calls were refused" in section and "| 3 | openai-chat | 0 | 0 |" in section
    assert "driver token budget was spent" in report  # the end reason, explained


def test_runs_without_a_driver_have_no_driver_section(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, [], agent="scripted", driver=None)
    assert driver_call_summary(run_dir, {}) is None
    BasicReport().render(run_dir, run_dir / "report")
    assert "## Driver calls" not in (run_dir / "report" / "report.md").read_text()
    assert json.loads((run_dir / "report" / "summary.json").read_text())["driver_calls"] is None


def test_a_torn_call_log_line_is_reported_not_fatal(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, [])
    (run_dir / "driver_calls.jsonl").write_text('{"usage": {"input_tokens": 5}}\n{"torn')
    summary = driver_call_summary(run_dir, {})
    assert summary is not None and summary["calls"] == 1 and summary["input_tokens"] == 5
    assert (
        summary["problems"] == [summary["problems"][0]] and ":2: not JSON" in summary["problems"][0]
    )
