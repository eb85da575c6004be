"""The environment: reset, search, answer, invalid actions, the step limit, the rule judge."""

from __future__ import annotations

import pytest
from autorl_task_deepsearchqa.corpus import Question
from autorl_task_deepsearchqa.env import DeepSearchQAEnv, parse_action
from autorl_task_deepsearchqa.expert import expert_actions
from autorl_task_deepsearchqa.prompt import build_messages, extract_action
from autorl_task_deepsearchqa.rules import rule_correct, split_items
from autorl_task_deepsearchqa.search_backends import Bm25SearchBackend

SINGLE = Question("s-1", "In which province was Ada Brimsel born?", ("Keldia",))
SET = Question(
    "s-2", "Which provinces border Keldia?", ("Vouria", "Lizulia", "Bosnia and Herzegovina"), "set"
)


@pytest.fixture(scope="module")
def bm25() -> Bm25SearchBackend:
    return Bm25SearchBackend()


def make(questions: list[Question], bm25: Bm25SearchBackend, **kw: int) -> DeepSearchQAEnv:
    return DeepSearchQAEnv(questions, bm25.search, **kw)


def test_search_shows_top_k_titles_and_snippets(bm25, eval_questions) -> None:
    question = eval_questions[0]
    env = make(eval_questions, bm25, top_k=2)
    observation, info = env.reset(question.session_id)
    assert observation == f"Question: {question.question}" and info["steps"] == 0
    observation, reward, done, info = env.step(f"search[{question.searches[0]}]")
    assert (reward, done, info["valid"], info["searches"]) == (0.0, False, True, 1)
    lines = observation.splitlines()
    assert lines[0] == f'Search results for "{question.searches[0]}":'
    assert len(lines) == 3 and lines[1].startswith(f"[1] {question.searches[0]}: ")


def test_expert_answers_every_shipped_question(bm25, train_questions, eval_questions) -> None:
    """Every supporting entry is found by its search within the top 3, and the answer judged."""
    for questions in (train_questions, eval_questions):
        env = make(questions, bm25)
        for question in questions:
            env.reset(question.session_id)
            for action in expert_actions(question, env.max_steps):
                observation, reward, done, info = env.step(action)
                if action.startswith("search"):
                    assert f"] {action[7:-1]}:" in observation, (question, observation)
            assert done and reward == 1.0 and info["success"] is True, question
            assert info["judge"] == "rule" and info["answered"] is True


def test_wrong_answer_ends_the_episode_unsuccessfully(bm25, eval_questions) -> None:
    env = make(eval_questions, bm25)
    env.reset(eval_questions[0].session_id)
    observation, reward, done, info = env.step("answer[Nowhere]")
    assert (reward, done, info["success"], info["correct"]) == (0.0, True, False, False)
    assert "Not correct" in observation
    again = env.step("search[anything]")
    assert again[2] is True and again[3]["valid"] is False


def test_invalid_actions_use_steps_and_the_limit_ends_the_episode(bm25, eval_questions) -> None:
    env = make(eval_questions, bm25, max_steps=3)
    env.reset(eval_questions[1].session_id)
    observation, _, done, info = env.step("look around")
    assert observation.startswith("Invalid action") and not done and info["valid"] is False
    observation, _, done, info = env.step("search[]")
    assert "needs an argument" in observation and "One step left" not in observation
    observation, reward, done, info = env.step("search[Calder]")
    assert done and reward == 0.0 and info["truncated"] and info["success"] is False
    assert "Out of steps (3)" in observation and info["answered"] is False


def test_one_step_left_warning(bm25, eval_questions) -> None:
    env = make(eval_questions, bm25, max_steps=2)
    env.reset(eval_questions[2].session_id)
    observation, _, done, _ = env.step("search[Calder]")
    assert observation.endswith("One step left: answer now.") and not done


def test_unknown_session_is_a_key_error(bm25, eval_questions) -> None:
    env = make(eval_questions[:3], bm25)
    with pytest.raises(KeyError, match="unknown DeepSearchQA session id 'nope'"):
        env.reset("nope")
    with pytest.raises(RuntimeError, match="reset"):
        make(eval_questions[:3], bm25).step("search[x]")


def test_set_answers_need_every_gold_item(bm25) -> None:
    env = make([SET], bm25)
    for response, correct in [
        ("Vouria, Lizulia and Bosnia and Herzegovina", True),
        ("bosnia and herzegovina; LIZULIA; the Vouria", True),
        ("Vouria, Lizulia", False),
        ("Vouria, Lizulia, Bosnia and Herzegovina, Keldia, Tovra, Brim, Sel, Ax, Bo", False),
    ]:
        env.reset("s-2")
        _, reward, done, info = env.step(f"answer[{response}]")
        assert done and info["correct"] is correct and reward == float(correct), response


def test_rule_judge_single_answers() -> None:
    gold = ("Kelp Sea",)
    assert rule_correct("The Kelp Sea.", gold, "single")
    assert rule_correct("It is the kelp sea", gold, "single")
    assert not rule_correct("Kelp", gold, "single")
    assert not rule_correct("Kelp Seas", gold, "single")
    long_answer = "maybe the Kelp Sea or the Red Sea or the Blue Bay or Lake Orn"
    assert not rule_correct(long_answer, gold, "single")
    assert rule_correct("Zoë", ("Zoe",), "single")
    assert split_items("x, y and z;\nw") == ["x", "y", "z", "w"]


def test_parse_and_extract_actions() -> None:
    assert parse_action("  SEARCH[ Ada   Brimsel ] ") == ("search", "Ada Brimsel")
    assert parse_action("answer[Keldia]") == ("answer", "Keldia")
    assert parse_action("click[x]") is None
    assert extract_action("Thought: look up\nAction: search[ Ada Brimsel ]\n") == (
        "search[Ada Brimsel]"
    )
    assert extract_action("I will ANSWER[Keldia] now") == "answer[Keldia]"
    assert extract_action("no action here") is None


def test_prompt_keeps_the_question_and_shortens_old_observations() -> None:
    messages = build_messages(["Question: q?", "obs1\nmore", "obs2", "obs3"], ["a1", "a2", "a3"], 2)
    assert [m["role"] for m in messages] == ["user"] + ["assistant", "user"] * 3
    assert (
        "Question: q?" in messages[0]["content"] and "search[<keywords>]" in messages[0]["content"]
    )
    assert "shortened): obs1" in messages[2]["content"] and "more" not in messages[2]["content"]
    assert "obs3" in messages[6]["content"]
    with pytest.raises(ValueError, match="one more observation"):
        build_messages(["o"], ["a"])
