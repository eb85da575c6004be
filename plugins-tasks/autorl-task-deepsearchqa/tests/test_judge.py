"""Judging answers: an LLM judge over real HTTP (fake provider, openai driver), the scripted
driver, the verdict cache, judge tokens and cost in the episode metrics, and offline replay of a
recorded evaluation (web searches and judge calls) giving the same score."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from autorl_llm.testing import Answer, FakeProvider, ReceivedRequest
from autorl_task_deepsearchqa import protocol
from autorl_task_deepsearchqa.brave_server import BraveServer
from autorl_task_deepsearchqa.expert import expert_actions
from autorl_task_deepsearchqa.judge import LLMJudge, judge_prompt, parse_verdict
from autorl_task_deepsearchqa.rules import rule_correct

JUDGE = "openai/gpt-4o-mini"


def judge_like_a_model(request: ReceivedRequest) -> Answer:
    """The fake provider's answer: read gold and response from the prompt, compare them."""
    prompt = request.body["messages"][-1]["content"]
    gold = re.search(r"^Gold answer: (.*)$", prompt, re.M).group(1)
    response = re.search(r"^Response: (.*)$", prompt, re.M).group(1)
    kind = "set" if "is a set of" in prompt else "single"
    items = gold.split(", ") if kind == "set" else [gold]
    verdict = "CORRECT" if rule_correct(response, items, kind) else "INCORRECT"
    return Answer(verdict, input_tokens=150, output_tokens=2)


def play(config: dict[str, Any], eval_path: Path) -> dict[str, Any]:
    """A fixed policy over every eval session: the expert, but a wrong answer every third one."""
    env = protocol.make_env(config, eval_path)
    successes, metrics = [], []
    for n, session_id in enumerate(protocol.load_sessions(eval_path)):
        env.reset(session_id)
        actions = expert_actions(env.question, env.max_steps)
        if n % 3 == 0:
            actions[-1] = "answer[Nowhere]"
        for action in actions:
            _, _, done, info = env.step(action)
            if done:
                break
        successes.append(bool(info["success"]))
        metrics.append(protocol.episode_metrics(info))
    totals = {k: sum(m[k] for m in metrics) for k in metrics[0]}
    return {"score": 100.0 * sum(successes) / len(successes), "successes": successes, **totals}


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch):
    with (
        FakeProvider(api_key="sk-judge", responder=judge_like_a_model) as fake,
        BraveServer(api_key="brave-key") as brave,
    ):
        monkeypatch.setenv("OPENAI_API_KEY", "sk-judge")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        monkeypatch.setenv("BRAVE_API_KEY", "brave-key")
        monkeypatch.setenv("BRAVE_SEARCH_BASE_URL", brave.url)
        yield fake, brave


def test_llm_judge_over_http_caches_and_replays_offline(
    online, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prepare
) -> None:
    fake, brave = online
    prepared = prepare(tmp_path / "cache", eval_size=12, judge=JUDGE, search_backend="brave")
    config = dict(prepared.evaluator_config)
    assert (config["judge"], config["search_backend"]) == (JUDGE, "brave")

    first = play(config, prepared.eval_path)
    assert first["successes"] == [n % 3 != 0 for n in range(12)] and first[
        "score"
    ] == pytest.approx(100 * 8 / 12)
    assert len(fake.requests) == 12 and first["judge_calls"] == 12
    sent = fake.requests[0]
    assert (
        sent.body["model"] == "gpt-4o-mini" and sent.headers["authorization"] == "Bearer sk-judge"
    )
    assert "Gold answer:" in sent.body["messages"][-1]["content"]
    assert (first["judge_input_tokens"], first["judge_output_tokens"]) == (12 * 150, 12 * 2)
    assert first["judge_cost_usd"] == pytest.approx(12 * (150 * 0.15 + 2 * 0.60) / 1e6)
    assert first["rule_judge"] == 0 and len(brave.requests) > 12

    second = play(config, prepared.eval_path)  # same answers: the verdict cache answers
    assert second["score"] == first["score"] and len(fake.requests) == 12
    assert (second["judge_calls"], second["judge_cached"], second["judge_cost_usd"]) == (0, 12, 0)
    records = protocol.records_dir(config, prepared.eval_path)
    fresh = LLMJudge(JUDGE, records)  # a new process would read the cache file
    question = protocol._questions(str(prepared.eval_path.resolve()))[1]
    assert fresh.grade(question, question.gold_text)["cached"] is True and len(fake.requests) == 12

    fake.stop()
    brave.stop()
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BRAVE_API_KEY", "BRAVE_SEARCH_BASE_URL"):
        monkeypatch.delenv(var)
    copy = tmp_path / "copied-records"  # replay works from a copy on another machine
    copy.mkdir()
    for name in ("searches.jsonl", "judge_cassette.jsonl"):
        (copy / name).write_bytes((records / name).read_bytes())
    replayed = play({**config, "replay": str(copy)}, prepared.eval_path)
    assert replayed["successes"] == first["successes"] and replayed["score"] == first["score"]
    tape = [
        json.loads(line) for line in (records / "judge_cassette.jsonl").read_text().splitlines()
    ]
    assert len(tape) == 12 and tape[0]["driver"] == JUDGE


def test_scripted_judge_is_a_driver_too(tmp_path: Path, prepare) -> None:
    script = tmp_path / "judge.json"
    script.write_text(
        json.dumps(
            {
                "rules": [{"match": "(?m)^Response: Nowhere$", "reply": "INCORRECT"}],
                "default": "CORRECT",
            }
        ),
        encoding="utf-8",
    )
    judge = f"scripted/{script}"
    prepared = prepare(tmp_path / "cache", eval_size=6, judge=judge)
    result = play(dict(prepared.evaluator_config), prepared.eval_path)
    assert result["successes"] == [False, True, True, False, True, True]
    assert result["judge_calls"] == 6 and result["judge_input_tokens"] > 0
    assert result["judge_cost_usd"] == 0.0


def test_rule_judge_is_labelled_and_costs_nothing(prepared) -> None:
    result = play(dict(prepared.evaluator_config), prepared.eval_path)
    n = len(result["successes"])
    assert result["rule_judge"] == n and result["judge_calls"] == 0
    assert result["score"] == pytest.approx(100 * sum(i % 3 != 0 for i in range(n)) / n)


def test_judge_prompt_and_verdicts(eval_questions) -> None:
    set_question = next(q for q in eval_questions if q.answer_type == "set")
    prompt = judge_prompt(set_question, "a, b")
    assert f"is a set of {len(set_question.answer)} items" in prompt
    assert f"Gold answer: {', '.join(set_question.answer)}" in prompt
    assert "set of" not in judge_prompt(eval_questions[0], "x")
    assert parse_verdict("CORRECT") is True and parse_verdict("incorrect.") is False
    assert parse_verdict("The answer is INCORRECT") is False and parse_verdict("yes") is None


def test_judge_options_reach_the_driver(online, tmp_path: Path, prepare) -> None:
    from autorl.errors import AutorlError

    fake, _ = online
    prepared = prepare(tmp_path / "cache", eval_size=3, judge=JUDGE)
    config = {**prepared.evaluator_config, "records_dir": str(tmp_path / "records")}
    with pytest.raises(AutorlError, match="bogus"):
        protocol.make_env({**config, "judge_options": {"bogus": 1}}, prepared.eval_path)
    good = {**config, "records_dir": str(tmp_path / "r2"), "judge_options": {"max_attempts": 1}}
    assert play(good, prepared.eval_path)["judge_calls"] == 3 and len(fake.requests) == 3
