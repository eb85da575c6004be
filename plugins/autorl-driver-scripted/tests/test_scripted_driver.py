"""The scripted backend: rules, ordered replies, tool calls, limits, errors, marking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from autorl_driver_scripted.driver import ScriptedDriver
from autorl_llm.drivers import ChatRequest, DriverCallLog, open_driver
from autorl_llm.drivers.errors import DriverConfigError, DriverError
from autorl_testing import DriverConformance

SCRIPT = """\
rules:
  - match: "(?i)which output is better"
    reply: "m"
  - match: "run the tests"
    reply: {text: "Running.", tool_call: {name: bash, arguments: {command: "pytest -q"}}}
replies:
  - "First answer."
  - "Second answer, which is a little longer."
when_exhausted: error
"""

USER = [{"role": "user", "content": "hello"}]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT)
    return path


class TestScriptedConformance(DriverConformance):
    plugin_module = "autorl_driver_scripted.plugin"
    component_options: ClassVar[dict] = {
        "model": "inline",
        "script": {"replies": ["ok"], "when_exhausted": "repeat_last"},
    }
    messages: ClassVar[list] = USER


def test_rules_then_ordered_replies_then_a_clear_error(script: Path) -> None:
    driver = ScriptedDriver(str(script))
    assert driver.complete([{"role": "user", "content": "Which output is BETTER?"}]).text == "m"
    assert driver.complete(USER).text == "First answer."
    assert driver.complete(USER).text == "Second answer, which is a little longer."
    with pytest.raises(DriverError) as err:
        driver.complete(USER)
    assert "no reply for call #3" in str(err.value) and "when_exhausted" in str(err.value)


def test_every_answer_says_scripted_and_costs_nothing(script: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    driver = open_driver(f"scripted/{script}", call_log=log)
    reply = driver.complete(USER)
    assert reply.scripted and reply.cost_usd == 0.0 and reply.driver == f"scripted/{script}"
    assert reply.usage.input_tokens == 2 and reply.usage.output_tokens == 4
    record = DriverCallLog.read(log)[0]
    assert record["scripted"] is True and record["response"]["scripted"] is True


def test_tool_calls_are_returned_and_checked_against_offered_tools(script: Path) -> None:
    driver = ScriptedDriver(str(script))
    tools = [{"name": "bash", "parameters": {"type": "object"}}]
    reply = driver.complete([{"role": "user", "content": "run the tests"}], tools=tools)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("bash", {"command": "pytest -q"})]
    assert reply.finish_reason == "tool_calls"
    with pytest.raises(DriverConfigError, match="calls tool 'bash', which the request does not"):
        driver.complete([{"role": "user", "content": "run the tests"}], tools=[{"name": "python"}])


def test_turn_mode_cycle_and_default() -> None:
    by_turn = ScriptedDriver("t", script={"replies": ["a", "b"], "replies_by": "turn"})
    convo = [{"role": "user", "content": "1"}]
    assert by_turn.complete(convo).text == "a"
    assert by_turn.complete(convo).text == "a"  # stateless: same conversation, same answer
    convo += [{"role": "assistant", "content": "a"}, {"role": "user", "content": "2"}]
    assert by_turn.complete(convo).text == "b"
    cycle = ScriptedDriver("c", script={"replies": ["x", "y"], "when_exhausted": "cycle"})
    assert [cycle.complete(USER).text for _ in range(3)] == ["x", "y", "x"]
    fallback = ScriptedDriver("d", script={"replies": ["x"], "default": "none"})
    assert [fallback.complete(USER).text for _ in range(2)] == ["x", "none"]


def test_stop_and_max_tokens_cut_the_text() -> None:
    driver = ScriptedDriver("s", script={"default": "one two three four five six seven"})
    assert driver.complete(USER, stop=["four"]).text == "one two three "
    cut = driver.complete(USER, max_tokens=3)
    assert cut.finish_reason == "length" and cut.usage.output_tokens <= 3 and cut.text


def test_streaming_comes_word_by_word(script: Path) -> None:
    driver = ScriptedDriver(str(script))
    chunks = list(driver.stream(ChatRequest.from_messages(USER)))
    assert [c.text for c in chunks[:-1]] == ["First ", "answer."]
    assert chunks[-1].response.text == "First answer." and chunks[-1].response.scripted


def test_json_scripts_and_relative_paths(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps(["from json"]))
    driver = ScriptedDriver("s.json", base_dir=str(tmp_path))
    assert driver.complete(USER).text == "from json"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("rules: [{match: 'a(', reply: x}]", "rules[0].match: invalid regex 'a('"),
        ("replies: [{txt: x}]", "replies[0]: unknown key(s) txt"),
        ("replies: [{tool_call: {arguments: {}}}]", "replies[0].tool_call: a tool call needs"),
        ("replies: [x]\nwhen_exhausted: loop", "when_exhausted: 'loop' is not one of"),
        ("colour: red", "top level: unknown key(s) colour"),
        ("replies: [x\n", "line 2: invalid YAML"),
        ("{}", "no rules, replies or default"),
    ],
)
def test_bad_scripts_point_at_the_entry(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(DriverConfigError) as err:
        ScriptedDriver(str(path))
    assert str(path) in str(err.value) and needle in str(err.value)


def test_missing_script_says_how_to_name_it(tmp_path: Path) -> None:
    with pytest.raises(DriverConfigError, match="does not exist") as err:
        ScriptedDriver(str(tmp_path / "nope.yaml"))
    assert "scripted/<path-to-script.yaml>" in str(err.value)
