"""The judge over real HTTP: the OpenAI and Anthropic backends against the project's fake
provider (a local server speaking both APIs). Streaming, a 429 then success, a timeout that fails
clearly and keeps what was judged, and a cassette that replays a judged score offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import autorl_driver_anthropic  # noqa: F401
import autorl_driver_openai  # noqa: F401
import pytest
from autorl_evaluator_judge.evaluator import JudgeEvaluator
from autorl_evaluator_judge.judging import JudgeError
from autorl_llm.testing import Answer, Delay, Fail, FakeProvider

from conftest import EXAMPLES, KEY, request

N = len(EXAMPLES)
FAST = {"initial_delay_s": 0.01, "jitter": 0.0}
SECOND_WINS = Answer("M", input_tokens=1000, output_tokens=1)


def openai_judge(fake: FakeProvider, **options) -> dict:
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": fake.openai_base_url}
    return {"judge": "openai/gpt-4.1", "judge_options": {"env": env, **FAST, **options}}


def anthropic_judge(fake: FakeProvider, **options) -> dict:
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.anthropic_base_url}
    return {
        "judge": "anthropic/claude-sonnet-4-6",
        "judge_options": {"env": env, **FAST, **options},
    }


def evaluate(model: Path, eval_path: Path, work: Path, **cfg) -> object:
    config = {
        "max_new_tokens": 12,
        "cache_dir": str(work.parent / "judge-cache"),
        **cfg,
    }
    return JudgeEvaluator().evaluate(request(model, eval_path, work, config))


def second_shown_wins(details_path: Path) -> float:
    """The raw win rate a judge that always answers "M" must give (model shown second wins)."""
    rows = [json.loads(line) for line in details_path.read_text().splitlines()]
    return 100.0 * sum(not r["model_shown_first"] for r in rows) / len(rows)


def test_openai_judge_streams_and_reports_tokens_and_cost(
    tiny_model_dir: Path, eval_path: Path, tmp_path: Path, fake: FakeProvider
) -> None:
    fake.default = SECOND_WINS
    result = evaluate(
        tiny_model_dir,
        eval_path,
        tmp_path / "w",
        stream=True,
        judge_temperature=0.0,
        **openai_judge(fake),
    )
    assert len(fake.requests) == N
    assert all(r.api == "openai-chat" and r.stream and r.model == "gpt-4.1" for r in fake.requests)
    body = fake.requests[0].body
    assert body["temperature"] == 0.0
    assert "m or M" in body["messages"][-1]["content"]
    m = result.metrics
    assert m["judge_scripted"] is False
    assert (m["judge_calls"], m["judge_input_tokens"], m["judge_output_tokens"]) == (N, 1000 * N, N)
    assert m["judge_cost_usd"] == pytest.approx(N * (1000 * 2.0 + 1 * 8.0) / 1e6)
    assert m["win_rate"] == pytest.approx(second_shown_wins(result.details_path))
    log = [json.loads(x) for x in (tmp_path / "w" / "judge_calls.jsonl").read_text().splitlines()]
    assert len(log) == N and all(r["streamed"] for r in log)


def test_anthropic_judge_recovers_from_a_rate_limit(
    tiny_model_dir: Path, eval_path: Path, tmp_path: Path, fake: FakeProvider
) -> None:
    fake.default = SECOND_WINS
    fake.enqueue(Fail(429, retry_after=0.1))
    result = evaluate(
        tiny_model_dir, eval_path, tmp_path / "w", concurrency=1, **anthropic_judge(fake)
    )
    assert [r.behaviour.split("(")[0] for r in fake.requests[:2]] != ["", ""]
    assert len(fake.requests) == N + 1  # one retried call
    assert all(r.api == "anthropic" for r in fake.requests)
    assert fake.requests[0].body["max_tokens"] == 1
    assert "temperature" not in fake.requests[0].body  # not sent unless set
    m = result.metrics
    assert m["judge_calls"] == N and m["judge_cost_usd"] > 0
    assert m["win_rate"] == pytest.approx(second_shown_wins(result.details_path))


def test_a_timeout_fails_clearly_and_keeps_what_was_judged(
    tiny_model_dir: Path, eval_path: Path, tmp_path: Path, fake: FakeProvider
) -> None:
    fake.default = SECOND_WINS
    fake.enqueue(SECOND_WINS, SECOND_WINS, Delay(5.0, then=SECOND_WINS))
    judge = openai_judge(fake, timeout_s=0.5, max_attempts=1)
    with pytest.raises(JudgeError) as failure:
        evaluate(tiny_model_dir, eval_path, tmp_path / "first", concurrency=1, **judge)
    message = str(failure.value)
    assert "judge openai/gpt-4.1 failed on example 'e2'" in message
    # e0 and e1 were judged; e3 too when the pool's one thread took it before the failure was
    # seen (a busy machine): every finished judgment is counted and kept
    judged = re.search(r"\((\d+) of 8 judged", message)
    assert judged and int(judged.group(1)) in (2, 3) and "resumes" in message, message
    again = evaluate(tiny_model_dir, eval_path, tmp_path / "again", concurrency=1, **judge)
    cached, calls = again.metrics["judge_cached"], again.metrics["judge_calls"]
    assert cached >= int(judged.group(1)) and cached + calls == N  # nothing asked again


def test_a_recorded_cassette_replays_the_same_score_offline(
    tiny_model_dir: Path, eval_path: Path, tmp_path: Path
) -> None:
    cassette = tmp_path / "judge-cassette.jsonl"
    with FakeProvider(api_key=KEY) as fake:
        # a judge that disagrees with itself, so the score depends on every answer
        fake.responder = lambda r: Answer("m" if len(fake.requests) % 3 else "M")
        recorded = evaluate(
            tiny_model_dir,
            eval_path,
            tmp_path / "rec",
            cache=False,
            cassette=str(cassette),
            **openai_judge(fake),
        )
    assert len(cassette.read_text().splitlines()) == N
    # the server is stopped and no key is given: only the cassette can answer
    replayed = evaluate(
        tiny_model_dir,
        eval_path,
        tmp_path / "rep",
        cache=False,
        cassette=str(cassette),
        cassette_mode="replay",
        judge="openai/gpt-4.1",
    )
    assert replayed.score == pytest.approx(recorded.score)
    assert replayed.metrics["win_rate"] == pytest.approx(recorded.metrics["win_rate"])
    assert replayed.metrics["judge_replayed"] == N
    assert replayed.metrics["judge_cost_usd"] == 0.0
