"""The reference's own loop and judge (task option prompt = "reference"): RD-Agent's
autorl_bench DeepSearchQA evaluator (benchmarks/deepsearchqa/eval.py, commit 471eb30).

Every string and number of that file that decides a score is written out here and compared;
the loop is replayed from the reference's steps (:func:`reference_loop`) and compared with the
environment played by the rollout evaluator's lockstep loop."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from autorl_llm.testing import Answer, Fail, FakeProvider, ReceivedRequest
from autorl_task_deepsearchqa import prompt_reference as ref
from autorl_task_deepsearchqa import protocol_reference
from autorl_task_deepsearchqa.corpus import Question
from autorl_task_deepsearchqa.env_reference import ReferenceEnv
from autorl_task_deepsearchqa.judge import (
    REFERENCE_JUDGE_PROMPT,
    REFERENCE_JUDGE_SYSTEM,
    REFERENCE_JUDGE_TEMPERATURE,
    LLMJudge,
    reference_judge_prompt,
    reference_string_match,
    reference_verdict,
)
from autorl_task_deepsearchqa.task import CONTRACTS, parse_options
from autorl_testing import evaluate_prepared
from autorl_testing.workspace import run_kit

from autorl.errors import ConfigError

SYSTEM = (
    "You are a research assistant that answers questions by searching the web.\n\n"
    "You must follow this format strictly:\n"
    "Thought: [your reasoning]\n"
    "Action: search[your search query]   <- to search the web\n"
    "  OR\n"
    "Action: answer[Paris]   <- to give final answer\n\n"
    "Rules:\n"
    "- Always start with a Thought\n"
    "- Use search[] to find information\n"
    "- Use answer[] ONLY when you have enough information\n"
    "- For Set Answer questions, list all items separated by commas\n"
    "- Be concise and factual\n"
)
JUDGE_TEXT = (
    "You are an answer evaluator. Compare the predicted answer to the gold answer.\n"
    "        Question answer type: Set Answer\n"
    "        Gold answer: Alpha, Beta\n"
    "        Predicted answer: beta and alpha\n"
    '        For "Single Answer": The predicted answer is correct if it contains the same key '
    "information as the gold answer.\n"
    '        For "Set Answer": The predicted answer is correct if it contains ALL items from the '
    "gold answer (order doesn't matter, minor wording variations are OK).\n"
    '        Reply with ONLY "correct" or "incorrect". No explanation.'
)
JUDGE = "openai/gpt-4o-mini"


def test_reference_strings_and_numbers() -> None:
    assert ref.REACT_SYSTEM_PROMPT == SYSTEM
    assert ref.question_block("Q?", "Single Answer") == (
        "Question: Q?\nAnswer type: Single Answer\n\nThought:"
    )
    assert ref.start_prompt("Q?", "Set Answer") == (
        SYSTEM + "\n\nQuestion: Q?\nAnswer type: Set Answer\n\nThought:"
    )
    assert ref.STOP == ("\nAction:", "\nThought:", "\nObservation:")
    assert protocol_reference.STOP == ref.STOP
    assert (ref.MAX_NEW_TOKENS, ref.FORCED_ANSWER_TOKENS, ref.MAX_STEPS) == (256, 128, 6)
    assert ref.ANSWER_TYPES == {"single": "Single Answer", "set": "Set Answer"}
    assert ref.FORCED_ANSWER == "\nAction: answer["
    assert ref.INVALID_ANSWER == "\nThat is not a valid answer. Please think again.\nThought:"
    assert ref.search_suffix("a | b") == "\nObservation: a | b\nThought:"
    assert (ref.PLACEHOLDER, ref.NO_ANSWER) == ("your final answer", "I don't know")
    # the observation: the top three snippets joined by " | ", or "No results found."
    assert ref.observation_text(["a", "b", "c", "d"]) == "a | b | c"
    assert ref.observation_text([]) == "No results found."
    assert ref.observation_text([""]) == "No results found."
    assert ref.observation_text(["", ""]) == " | "  # joined first, as the reference
    # the action: from the stripped reply only, first match, DOTALL, case-sensitive verbs
    assert ref.parse_reply("I look. Action: search[ Ada ] Action: answer[x]") == ("search", "Ada")
    assert ref.parse_reply("Action:answer[two\nlines]") == ("answer", "two\nlines")
    assert ref.parse_reply("Action: Search[x]") is None and ref.parse_reply("search[x]") is None
    assert ref.parse_reply("Action: answer[]") is None
    assert ref.is_placeholder(" Your Final Answer ") and not ref.is_placeholder("Paris")
    assert ref.cut_forced_answer(" Paris ] and more]") == "Paris"
    trace = "Action: answer[A]\nAction: answer[your final answer]\nx"
    assert ref.last_answer(trace) == "A" and ref.last_answer("nothing") == "I don't know"
    assert ref.last_answer("Action: answer[Your final answer]") == "I don't know"


def test_reference_judge_prompt_reading_and_fallback() -> None:
    assert REFERENCE_JUDGE_SYSTEM == "You are a strict answer evaluator."
    assert REFERENCE_JUDGE_TEMPERATURE == 0.5
    question = Question("q", "Which?", ("Alpha", "Beta"), "set", answer_text="Alpha, Beta")
    assert reference_judge_prompt(question, "beta and alpha") == JUDGE_TEXT
    assert (
        REFERENCE_JUDGE_PROMPT.format(
            answer_type="Set Answer", gold="Alpha, Beta", predicted="beta and alpha"
        )
        == JUDGE_TEXT
    )
    shipped = Question("s", "Which?", ("Kelp Sea",), "single")  # no data-set text: ours
    assert "answer type: Single Answer\n        Gold answer: Kelp Sea\n" in (
        reference_judge_prompt(shipped, "x")
    )
    # the reading: first line, stripped of punctuation, lower-cased, == "correct"
    assert reference_verdict("Correct.") and reference_verdict("  CORRECT!\nbecause")
    assert not reference_verdict("incorrect") and not reference_verdict("The answer is correct")
    assert not reference_verdict("**correct**")
    for empty in ("", "  \n ", None):  # the reference raises here, then string-matches
        with pytest.raises((IndexError, AttributeError)):
            reference_verdict(empty)
    # the fallback: single, either way round; set, every comma-separated gold item
    assert reference_string_match("It is PARIS.", " Paris", "Single Answer")
    assert reference_string_match("par", "Paris", "Single Answer")
    assert reference_string_match("", "Paris", "Single Answer")  # "" is in every gold
    assert not reference_string_match("Lyon", "Paris", "Single Answer")
    assert reference_string_match("beta, alpha", "Alpha, Beta", "Set Answer")
    assert not reference_string_match("alpha", "Alpha, Beta", "Set Answer")
    assert not reference_string_match("a, b", "A\nB", "Set Answer")  # items split at commas only


def _answers(request: ReceivedRequest) -> Answer | Fail:
    prompt = request.body["messages"][-1]["content"]
    predicted = re.search(r"Predicted answer: (.*)$", prompt, re.M).group(1)
    if predicted == "boom":
        return Fail(status=400, message="bad request")
    if predicted == "silent":
        return Answer("")
    return Answer("Correct." if predicted == "Paris" else "incorrect", output_tokens=2)


def test_reference_llm_judge_over_http_with_cache_and_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = Question("q", "Capital?", ("Paris",), "single", answer_text="Paris")
    with FakeProvider(api_key="sk-j", responder=_answers) as fake:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-j")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        judge = LLMJudge(JUDGE, tmp_path, style="reference", options={"max_attempts": 1})
        first = judge.grade(question, "Paris")
        assert first["correct"] and not first["fallback"] and not first["cached"]
        body = fake.requests[0].body
        assert body["messages"][0] == {"role": "system", "content": REFERENCE_JUDGE_SYSTEM}
        assert body["messages"][-1]["content"] == reference_judge_prompt(question, "Paris")
        assert body["temperature"] == 0.5 and "max_tokens" not in body
        assert judge.grade(question, "Paris")["cached"] and len(fake.requests) == 1
        chat = LLMJudge(JUDGE, tmp_path)  # same records: the key holds system and prompt
        assert chat.key(reference_judge_prompt(question, "Paris")) != judge.key(
            reference_judge_prompt(question, "Paris")
        )
        assert judge.grade(question, "Lyon")["correct"] is False
        silent = judge.grade(question, "silent")  # empty reply: the string match decides
        assert silent["fallback"] and silent["correct"] is False
        failed = judge.grade(question, "boom")  # a failed call: the string match, not cached
        assert failed["fallback"] and "bad request" in failed["error"]
        assert judge.grade(question, "boom")["cached"] is False
    rows = [json.loads(line) for line in (tmp_path / "judge_cache.jsonl").read_text().splitlines()]
    assert [r["text"] for r in rows] == ["Correct.", "incorrect", ""]
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var)
    replay = LLMJudge(JUDGE, tmp_path / "again", replay_dir=tmp_path, style="reference")
    assert replay.grade(question, "Paris")["correct"]
    assert replay.grade(question, "silent")["fallback"]
    from autorl_llm.drivers.errors import CassetteMissError

    with pytest.raises(CassetteMissError):  # a failed call was never recorded: never silent
        replay.grade(question, "boom")


# the loop, step by step ----------------------------------------------------------------------

Generate = Callable[[str, int, list[str]], str]


def reference_loop(
    generate: Generate,
    search_fn: Callable[[str], str],
    question: str,
    answer_type: str,
    max_steps: int = 6,
) -> str:
    """RD-Agent's ``_react_loop`` as its code reads, ``generate(prompt, max_tokens, stop)``
    standing for ``llm.generate`` (greedy)."""
    conversation = f"Question: {question}\nAnswer type: {answer_type}\n\nThought:"
    full_prompt = f"{SYSTEM}\n\n{conversation}"
    model_trace = ""
    for _ in range(max_steps):
        generated = generate(full_prompt, 256, ["\nAction:", "\nThought:", "\nObservation:"])
        generated = generated.strip()
        model_trace += ("\n" + generated) if model_trace else generated
        full_prompt += f" {generated}"
        match = re.search(r"Action:\s*(search|answer)\[(.+?)\]", generated, re.DOTALL)
        if not match:
            full_prompt += "\nAction: answer["
            generated2 = generate(full_prompt, 128, ["]"]).strip()
            model_trace += ("\n" + generated2) if generated2 else ""
            if generated2.strip().lower() == "your final answer":
                continue
            return generated2.strip()
        action_type, action_content = match.group(1), match.group(2).strip()
        if action_type == "answer":
            if action_content.lower() == "your final answer":
                full_prompt += "\nThat is not a valid answer. Please think again.\nThought:"
                continue
            return action_content
        observation = search_fn(action_content)
        full_prompt += f"\nObservation: {observation}\nThought:"
    last_answer = re.findall(r"Action:\s*answer\[(.+?)\]", model_trace, re.DOTALL)
    real = [a.strip() for a in last_answer if a.strip().lower() != "your final answer"]
    return real[-1] if real else "I don't know"


def cut(text: str, stop: list[str] | tuple[str, ...]) -> str:
    """vLLM's (and our generator's) stop strings: the text before the earliest, excluded."""
    ends = [text.find(s) for s in stop if s in text]
    return text[: min(ends)] if ends else text


SNIPPETS = {
    "Ada Brimsel": ["Ada Brimsel was born in Tovra.", "A painter.", "Born 1901.", "Unused."],
    "Tovra": ["Tovra lies in Keldia."],
    "nothing": [],
    "blank": ["", ""],
}
SCRIPTS: dict[str, tuple[list[str], int]] = {
    # searches, then answers; text after the action is kept (up to a stop string)
    "search then answer": (
        [
            "I should look her up. Action: search[Ada Brimsel]\nObservation: invented",
            "Now the city. Action: search[Tovra] then",
            "  She was born in Keldia. Action: answer[Keldia]  ",
        ],
        6,
    ),
    # the action on its own line: the stop cuts it off, the answer is forced
    "forced answer": (["Let me think.\nAction: search[Ada Brimsel]", " Tovra ] trailing"], 6),
    # a forced placeholder goes on with the suffix left; a placeholder answer is refused
    "placeholders": (
        [
            "hmm",
            "your final answer]",
            "Right. Action: search[nothing]",
            "Action: answer[Your Final Answer]",
            "Done. Action: search[blank]",
            "So. Action: answer[Calder]",
        ],
        6,
    ),
    # out of steps: the last real answer of the trace (the regex spans replies), or none
    "trace answer": (["Action: answer[foo", "your final answer]", "Action: search[Tovra]"], 2),
    "no answer": (["Action: search[Tovra]"] * 3, 3),
    "empty forced answer": (["", "]"], 6),
}


def snippets_of(query: str) -> list[str]:
    return SNIPPETS.get(query, [f"About {query}."])


def serpapi_text(query: str) -> str:
    """The reference's ``_serpapi_search`` over the same results."""
    snippets = [r.get("snippet", "") for r in [{"snippet": s} for s in snippets_of(query)][:3]]
    return " | ".join(snippets) or "No results found."


def run_reference(name: str) -> tuple[list[str], str]:
    replies, max_steps = SCRIPTS[name]
    script = iter(replies)
    prompts: list[str] = []

    def generate(prompt: str, _max_tokens: int, stop: list[str]) -> str:
        prompts.append(prompt)
        return cut(next(script), stop)

    answer = reference_loop(generate, serpapi_text, f"Question {name}?", "Single Answer", max_steps)
    return prompts, answer


def test_verbatim_loop_equals_the_reference_steps() -> None:
    from autorl_evaluator_rollout.lockstep import Lockstep, Reply

    questions = [
        Question(f"s{i}", f"Question {name}?", ("Keldia",), "single", type_label="Single Answer")
        for i, name in enumerate(SCRIPTS)
    ]
    names = {f"Question {name}?": name for name in SCRIPTS}
    scripts: dict[str, Iterator[str]] = {name: iter(r) for name, (r, _) in SCRIPTS.items()}
    sent: dict[str, list[str]] = {name: [] for name in SCRIPTS}
    graded: dict[str, str] = {}

    def search(query: str, k: int) -> list[dict[str, str]]:
        return [{"title": "t", "snippet": s, "url": ""} for s in snippets_of(query)][:k]

    def grade(question: Question, predicted: str) -> dict[str, Any]:
        graded[names[question.question]] = predicted
        return {"correct": predicted == "Keldia", "judge": "rule"}

    def policy(prompts: list[Any]) -> list[Reply]:
        replies = []
        for prompt in prompts:
            assert isinstance(prompt, str)
            name = re.search(r"^Question: Question (.*)\?$", prompt, re.M).group(1)
            sent[name].append(prompt)
            replies.append(Reply(cut(next(scripts[name]), protocol_reference.STOP)))
        return replies

    for name, (_, max_steps) in SCRIPTS.items():
        lockstep = Lockstep(
            make_env=lambda m=max_steps: ReferenceEnv(questions, search, grade, max_steps=m),
            policy=policy,
            build_messages=protocol_reference.build_messages,
            extract_action=protocol_reference.extract_action,
            batch_size=2,
        )
        (episode,) = lockstep.run([q.session_id for q in questions if names[q.question] == name])
        prompts, answer = run_reference(name)
        assert sent[name] == prompts, name
        assert graded[name] == answer == episode.final_info["answer"], name
        assert episode.success == (answer == "Keldia")
    assert graded == {
        "search then answer": "Keldia",
        "forced answer": "Tovra",
        "placeholders": "Calder",
        "trace answer": "foo\nyour final answer\nAction: search[Tovra",
        "no answer": "I don't know",
        "empty forced answer": "",
    }
    placeholders = sent["placeholders"]
    assert placeholders[2].endswith("Thought: hmm\nAction: answer[")  # the suffix stays
    assert "\nObservation: No results found.\nThought:" in placeholders[4]
    assert placeholders[5].endswith("Action: search[blank]\nObservation:  | \nThought:")
    assert "That is not a valid answer. Please think again.\nThought:" in placeholders[4]
    first = sent["search then answer"][1]
    assert first.endswith(
        "Thought: I should look her up. Action: search[Ada Brimsel]\nObservation: Ada Brimsel "
        "was born in Tovra. | A painter. | Born 1901.\nThought:"
    )


def test_env_reports_steps_and_validity() -> None:
    question = Question("s0", "Q?", ("Keldia",), "set")
    env = ReferenceEnv([question], lambda q, k: [], max_steps=2)
    start, info = env.reset("s0")
    assert start == ref.start_prompt("Q?", "Set Answer") and info["steps"] == 0
    text, _, done, info = env.step("no action here")
    assert text == " no action here\nAction: answer[" and not done and not info["valid"]
    text, _, done, info = env.step("your final answer] more")
    assert (text, done, info["steps"]) == ("", False, 1)
    assert env.full_prompt.endswith("Thought: no action here\nAction: answer[")
    _, reward, done, info = env.step("Action: answer[Keldia]")
    assert done and reward == 1.0 and info["success"] and info["answered"]
    assert env.model_trace == "no action here\nyour final answer\nAction: answer[Keldia]"
    assert env.step("again")[2] is True


# the task option, the contract, the kit --------------------------------------------------------


def test_prompt_option_defaults_and_refusals(tmp_path: Path, prepare) -> None:
    assert parse_options({}).prompt == "chat"
    assert parse_options({"data_path": str(tmp_path)}).prompt == "reference"
    assert parse_options({"data_path": str(tmp_path), "prompt": "chat"}).prompt == "chat"
    with pytest.raises(ConfigError, match="prompt: Input should be 'chat' or 'reference'"):
        parse_options({"prompt": "react"})
    assert CONTRACTS == {
        "chat": "autorl_task_deepsearchqa.protocol",
        "reference": "autorl_task_deepsearchqa.protocol_reference",
    }
    prepared = prepare(tmp_path / "cache", prompt="reference", eval_size=2, train_size=4)
    config = prepared.evaluator_config
    assert prepared.contract == CONTRACTS["reference"]
    assert (config["max_new_tokens"], config["temperature"], config["max_steps"]) == (256, 0.0, 6)
    assert config["top_k"] == 3
    assert "raw text, no chat template" in prepared.description
    assert ref.REACT_SYSTEM_PROMPT.splitlines()[0] in prepared.description
    chat = prepare(tmp_path / "cache", eval_size=2, train_size=4)
    assert chat.contract == CONTRACTS["chat"] and chat.evaluator_config["max_new_tokens"] == 64


def test_protocol_module_plays_the_prepared_split(tmp_path: Path, prepare) -> None:
    prepared = prepare(tmp_path / "cache", prompt="reference", eval_size=2, train_size=4)
    config = dict(prepared.evaluator_config)
    env = protocol_reference.make_env(config, prepared.eval_path)
    sessions = protocol_reference.load_sessions(prepared.eval_path)
    start, info = env.reset(sessions[0])
    question = env.question
    assert start == ref.start_prompt(question.question, ref.ANSWER_TYPES[question.answer_type])
    query = question.searches[0]
    text, _, _, _ = env.step(f"Searching. Action: search[{query}]")
    assert text.startswith(f" Searching. Action: search[{query}]\nObservation: ")
    assert text.count(" | ") >= 1 and "Search results" not in text
    assert protocol_reference.build_messages([start, text], ["x"]) == start + text
    _, reward, done, info = env.step(f"Done. Action: answer[{question.gold_text}]")
    assert done and reward == 1.0 and info["judge"] == "rule"
    metrics = protocol_reference.episode_metrics(info)
    assert metrics["searches"] == 1.0 and metrics["rule_judge"] == 1.0
    assert protocol_reference.extract_action("  anything\n") == "  anything\n"


def test_kit_exposes_the_graders_format(tmp_path: Path, prepare) -> None:
    prepared = prepare(tmp_path / "cache", prompt="reference", eval_size=2, train_size=6)
    script = """
env = kit.make_env()
out = {"prompt": kit.PROMPT, "env": type(env).__name__, "episodes": []}
for sid in kit.train_ids():
    episode = kit.expert_episode(sid)
    check = kit.make_env()
    obs, _ = check.reset(sid)
    observations, actions, same = [obs], [], []
    for step in episode["steps"]:
        same.append(step["prompt"] == check.full_prompt == step["messages"]
                    == kit.grader_prompt(sid, observations, actions))
        obs, *_ = check.step(kit.grader_action(step["action"]))
        observations.append(obs)
        actions.append(step["action"])
    out["episodes"].append({"success": episode["success"], "same": same,
                            "actions": [s["action"] for s in episode["steps"]]})
out["reply"] = kit.grader_reply("I have enough information to answer. Action: answer[X]")
print(json.dumps(out))
"""
    package = Path(protocol_reference.__file__).parent
    for name in ("prompt_reference.py", "env_reference.py", "env.py", "corpus.py"):
        kit_file = Path(prepared.kit_dir) / "deepsearchqa_env" / name
        assert kit_file.read_text() == (package / name).read_text(), name
    out = run_kit(tmp_path / "workspace", script, kit_dir=prepared.kit_dir, timeout=60)
    assert (out["prompt"], out["env"]) == ("reference", "ReferenceEnv")
    assert all(e["success"] and all(e["same"]) for e in out["episodes"])
    actions = out["episodes"][0]["actions"]
    assert actions[0].startswith("I need to look this up. Action: search[")
    assert actions[-1].startswith("I have enough information to answer. Action: answer[")
    reply = out["reply"]
    assert reply == " I have enough information to answer. Action: answer[X]\nObservation:"
    # what the grader keeps of that reply: cut at its stops, stripped, is the action
    assert cut(reply, ref.STOP).strip() == reply.split("\n")[0].strip()
    assert ref.parse_reply(cut(reply, ref.STOP).strip()) == ("answer", "X")


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_rollout_evaluator_plays_the_reference_prompt(tmp_path: Path, prepare) -> None:
    import autorl_model_tiny.model as tiny

    from autorl.contracts import prepared_contract
    from autorl.registry import get_registry

    prepared = prepare(tmp_path / "cache", prompt="reference", eval_size=2, train_size=4)
    model_dir = tiny.TinyModel().materialize(tmp_path / "models").path
    registry = get_registry()
    contract = prepared_contract(registry, "deepsearchqa", prepared)[1]
    assert contract.__name__ == "autorl_task_deepsearchqa.protocol_reference"
    registry.create("evaluator", prepared.evaluator).check_config(
        prepared.evaluator_config, contract
    )
    result = evaluate_prepared("deepsearchqa", prepared, model_dir, tmp_path / "work", batch_size=2)
    assert result.n == 2 and 0.0 <= result.score <= 100.0
    rows = [json.loads(line) for line in Path(result.details_path).read_text().splitlines()]
    for row in rows:
        assert row["done"] and row["observations"][0].startswith(SYSTEM + "\n\nQuestion: ")
        assert row["actions"] == row["replies"]  # the environment reads each reply itself
        assert row["final_info"]["judged"] and row["steps"] <= 2 * 6
        assert row["final_info"]["steps"] <= 6
