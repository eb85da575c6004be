"""The agent-facing ``description.md``: the environment, the actions, the prompt, the metric.

The agent may know how it is graded (prompt, step limit, judge, decoding), never the eval split.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autorl_task_deepsearchqa.prompt import build_messages
from autorl_task_deepsearchqa.prompt_reference import start_prompt

SPLIT_TEXT = {
    "offline-encyclopedia": (
        "multi-hop questions written for this project over a shipped encyclopedia of a "
        "fictional country (330 short entries); the held-out questions are other questions over "
        "the same encyclopedia"
    ),
    "deepsearchqa-reference": (
        "the google/deepsearchqa questions (reference split: seed 42, 100 train / 200 held out)"
    ),
}


REFERENCE_SCORING = """The grader plays the {n_eval} held-out questions with your checkpoint as the
reference implementation does (RD-Agent's DeepSearchQA evaluator): raw text, no chat template,
greedy, at most {max_new_tokens} new tokens a step, generation stopped at `\\nAction:`,
`\\nThought:` or `\\nObservation:`. The first prompt is:

{example_block}

Each reply is stripped and appended after a space; its first `Action: search[...]` or
`Action: answer[...]` (on the same line as the thought: a new line before `Action:` stops the
generation) is the action. A search appends `\\nObservation: <the top 3 snippets joined by " | ">
\\nThought:`; an answer ends the episode. A reply without an action appends
`\\nAction: answer[` and the next reply, up to its first `]`, is the answer. After
{max_steps} steps the last `answer[...]` you wrote counts, else "I don't know". The kit's
`grader_prompt`, `grader_action` and `grader_reply` give this format exactly."""


def describe(
    *,
    split: str,
    n_train: int,
    n_eval: int,
    evaluator_config: Mapping[str, Any],
    prompt: str = "chat",
) -> str:
    source = SPLIT_TEXT.get(split, SPLIT_TEXT["offline-encyclopedia"])
    example = build_messages(["Question: <the question>"], [])[0]["content"]
    example_block = "\n".join(f"    {line}" for line in example.splitlines())
    judge = evaluator_config.get("judge", "rule")
    window = evaluator_config.get("history_window", 1)
    judge_text = (
        "a deterministic rule judge (normalised match; for set answers every gold item must be "
        "named, and at most twice as many items as the gold set)"
        if judge == "rule"
        else f"an LLM judge ({judge}) that compares the answer with the gold answer (for set "
        "answers it must contain every gold item)"
    )
    steps = evaluator_config.get("max_steps", 6)
    shown = "title: snippet"
    limits = (
        f"An invalid action uses a step. After {steps} steps without an answer the episode ends "
        "unanswered."
    )
    if prompt == "reference":
        shown = 'their snippets joined by " | "'
        limits = (
            f"After {steps} steps without an answer, the last answer you wrote is judged "
            '(else "I don\'t know").'
        )
        start = start_prompt("<the question>", "<Single Answer or Set Answer>")
        scoring = REFERENCE_SCORING.format(
            n_eval=n_eval,
            max_new_tokens=evaluator_config.get("max_new_tokens", 256),
            max_steps=evaluator_config.get("max_steps", 6),
            example_block="\n".join(f"    {line}" for line in start.splitlines()),
        )
    else:
        tokens = evaluator_config.get("max_new_tokens", 64)
        scoring = f"""The grader plays the {n_eval} held-out questions with your checkpoint \
(greedy decoding, at most {tokens} new tokens per action; the latest {window} observation(s) in \
full, older ones shortened to their first line) and reports the accuracy in percent. The prompt \
is a chat; its first user message is:

{example_block}

then the model's actions are assistant messages and each new observation a user message
(`Observation:\\n...\\nAction:`)."""
    return f"""# Task: DeepSearchQA (search-and-answer agent, level 3)

Post-train the base model into a research agent: given a question that needs several look-ups
(for example "In which province was the painter Ada Brimsel born?"), it searches, reads the
results, searches again, and answers. Data: {source}.

## The environment

Each episode is one question. Every turn the model replies with exactly one action:

- `search[<keywords>]`: the top {evaluator_config.get("top_k", 3)} results of the \
`{evaluator_config.get("search_backend", "bm25")}` search backend ({shown});
- `answer[<answer>]`: the final answer; it ends the episode. For questions asking for several
  items, list them all separated by commas.

{limits} Reward: 1 if {judge_text} accepts the answer, else 0.

## How checkpoints are scored

{scoring}

## What you get

- `data/train.jsonl`: {n_train} train questions with their gold answers (`answer` is a list;
  `answer_type` is `single` or `set`), the supporting entries and the searches that find them.
- `kit/autorl_kit.py`: the same environment on the TRAIN questions (`make_env()`,
  `train_ids()`, `expert_episode(session_id)` for SFT warm-up data in the exact prompt format,
  `build_messages`, `extract_action`, `search(query, k)`), with the rule judge as its reward.
  Import it with `sys.path.insert(0, "kit")`. It needs `rank_bm25`.
"""
