"""The trajectory export on the common trajectory format (the schema of autorl-agent-react and
the CLI adapters) and the gateway's call-log records, as docs/analysis.md documents them."""

from __future__ import annotations

import json
from pathlib import Path

from autorl_analysis.trajectory import export_rows


def test_trajectory_and_driver_calls_become_openai_messages(tmp_path: Path) -> None:
    events = [
        {"v": 1, "ts": "2026-01-01T00:00:01Z", "type": "turn", "turn": 1, "agent": "react"},
        {"v": 1, "ts": "", "type": "message", "turn": 1, "agent": "react", "role": "user",
         "text": "train a model"},
        {"v": 1, "ts": "", "type": "tool_call", "turn": 1, "agent": "react", "id": "c1",
         "name": "bash", "arguments": {"command": "python code/train.py"}},
        {"v": 1, "ts": "", "type": "tool_result", "turn": 1, "agent": "react", "id": "c1",
         "name": "bash", "ok": True, "output": "{'loss': '1.0', 'mean_token_accuracy': '0.2'}"},
    ]  # fmt: skip
    (tmp_path / "agent_trajectory.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    call = {
        "ts": "2026-01-01T00:00:02Z",
        "driver": "scripted/demo",
        "request": {"messages": [{"role": "user", "content": "hi"}], "system": "be brief"},
        "response": {"text": "", "tool_calls": [{"id": "t1", "name": "bash", "arguments": {}}]},
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    (tmp_path / "driver_calls.jsonl").write_text(json.dumps(call) + "\n")
    rows = export_rows(tmp_path, [], "agent_trajectory.jsonl")
    assert [r["source"] for r in rows] == ["agent_trajectory.jsonl", "driver_calls.jsonl"]
    assert [r["basis"] for r in rows] == ["claimed", "observed"]
    messages = rows[0]["messages"]
    assert messages[0] == {"role": "user", "content": "train a model"}
    assert messages[1]["tool_calls"][0]["function"] == {
        "name": "bash",
        "arguments": json.dumps({"command": "python code/train.py"}),
    }
    assert messages[2]["role"] == "tool" and messages[2]["tool_call_id"] == "c1"
    second = rows[1]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant"]
    assert second["messages"][-1]["tool_calls"][0]["id"] == "t1"
    assert second["usage"] == {"input_tokens": 3, "output_tokens": 4}
    assert second["model"] == "scripted/demo"


def test_a_link_in_place_of_the_trajectory_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"type": "message", "text": "held-out answer"}) + "\n")
    run = tmp_path / "run"
    (run / "home").mkdir(parents=True)
    (run / "home" / "react-trajectory.jsonl").symlink_to(secret)
    assert export_rows(run, [], "home/react-trajectory.jsonl") == []
