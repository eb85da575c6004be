"""The record's call-log reader: what the agent or its model chose is bounded in each row, and
the totals follow the file (read once while it does not change, again when it does)."""

from __future__ import annotations

import json
from pathlib import Path

from autorl_records import driver_call_summary
from autorl_records.logs import MESSAGE_CHARS, NAME_CHARS


def call(**fields: object) -> str:
    return json.dumps({"ts": "2026-01-01T00:00:00Z", "usage": {"input_tokens": 3}, **fields})


def test_echoed_text_is_bounded_and_the_totals_follow_the_file(tmp_path: Path) -> None:
    log = tmp_path / "driver_calls.jsonl"
    echo = "<img src=x onerror=alert(1)>" * 1000  # an upstream error quoting the agent
    log.write_text(
        call(error={"type": "BadRequest", "message": echo}) + "\n"
        + call(response={"tool_calls": [{"name": "t" * 5000}] * 100}) + "\n"
    )  # fmt: skip
    first = driver_call_summary(tmp_path, {})
    assert first is not None and first["calls"] == 1 and first["errors"] == 1
    failed, answered = first["rows"]
    assert len(failed["error_message"]) == MESSAGE_CHARS and len(first["last_error"]) == 500
    assert len(answered["tool_calls"]) == 32 and {len(n) for n in answered["tool_calls"]} == {
        NAME_CHARS
    }
    first["rows"].clear()  # a caller's change does not reach the next reader
    assert len(driver_call_summary(tmp_path, {})["rows"]) == 2
    with log.open("a") as fh:
        fh.write(call(refused=True, error={"type": "BudgetRefused", "message": "spent"}) + "\n")
    again = driver_call_summary(tmp_path, {"driver_usage": {"exhausted": "tokens"}})
    assert again["refused"] == 1 and again["errors"] == 1 and len(again["rows"]) == 3
    assert again["budget"] == {"exhausted": "tokens"}
