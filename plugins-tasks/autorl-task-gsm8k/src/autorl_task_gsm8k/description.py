"""The agent-facing ``description.md``: the task, the data format, the exact metric and prompt.

The agent may know how it is graded (prompt, decoding, extraction), never the eval data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autorl_task_gsm8k.kit import FORMAT_REWARD, PROMPT_TEMPLATE, REFERENCE_TEMPLATE

SPLIT_TEXT = {
    "offline-gsm-symbolic": (
        "GSM8K-style problems generated offline from the GSM8K-derived templates of "
        "reasoning-gym's `gsm_symbolic` (the held-out problems come from the same templates "
        "with other numbers and names; no eval question appears in the train split)"
    ),
    "gsm8k-reference": "the real GSM8K: its train split here, its test split held out",
}


def describe(
    *,
    split: str,
    n_train: int,
    n_eval: int,
    evaluator_config: Mapping[str, Any],
    few_shot_source: str | None = None,
) -> str:
    source = (
        SPLIT_TEXT.get(split)
        or SPLIT_TEXT[
            "gsm8k-reference" if split.startswith("gsm8k-reference") else "offline-gsm-symbolic"
        ]
    )
    max_new_tokens = evaluator_config.get("max_new_tokens")
    shots = evaluator_config.get("few_shot") or []
    if shots:
        return _describe_reference(source, n_train, n_eval, max_new_tokens, shots, few_shot_source)
    prompt = PROMPT_TEMPLATE.format(question="<question>")
    prompt_block = "\n".join(f"    {line}" for line in prompt.splitlines())
    return f"""# Task: GSM8K (grade-school math word problems)

Post-train the base model so it solves grade-school math word problems: multi-step arithmetic
in plain language, with one numeric answer each.

## Data

`data/train.jsonl`: {n_train} training problems, {source}. One JSON object per line:

    {{"id": "train-00000", "question": "...", "answer": "288",
      "solution": "step-by-step reasoning ...\\n#### 288"}}

- `answer`: the final number as a string (no units, no thousands separators).
- `solution`: a worked chain of thought ending in a line `#### <answer>`.

The grader scores your checkpoints on {n_eval} held-out problems of the same kind that you
never see.

## Metric: exact match of the final number (accuracy, in percent)

For each held-out question the grader:

1. sends this single user message through the model's own chat template (with the generation
   prompt; no system message, no few-shot examples):

{prompt_block}

2. decodes greedily (greedy decoding, temperature 0) for at most {max_new_tokens} new tokens,
   stopping at the end-of-turn token;
3. extracts the answer: the number after the first `#### `, or, when there is none, the last
   number in the output; commas, `$` and trailing zeros are ignored (`1,000.0` equals `1000`);
4. counts it correct when it equals the gold answer.

So answers should end with a line `#### <number>`, and stop there.

## Kit

`kit/autorl_kit.py` (standard library only, on `PYTHONPATH`) holds the grader's logic:
`PROMPT_TEMPLATE` and `build_messages(question)` (the exact prompt above),
`extract_answer(text)`, `is_correct(completion, answer)`, `load_train()` (reads
`data/train.jsonl`), and a train-time `reward(completion, answer)`: 1.0 for the right number,
{FORMAT_REWARD} for a wrong number in `#### N` form (a shaping term; the grader counts exact
matches only), else 0.0. `trl_reward` wraps it for TRL's `GRPOTrainer`. Editing the workspace
copy does not change grading: the grader uses its own installed copy.

## Checkpoints

Save a full Hugging Face model directory (weights, `config.json`, tokenizer files, chat
template) or a PEFT LoRA adapter under `output/` and submit it through the grading API.
"""


def _describe_reference(
    source: str,
    n_train: int,
    n_eval: int,
    max_new_tokens: Any,
    shots: list[Mapping[str, str]],
    few_shot_source: str | None,
) -> str:
    """Real GSM8K, graded as the reference grades it (OpenCompass ``gsm8k_gen``)."""
    prompt = "\n".join(f"    {line}" for line in REFERENCE_TEMPLATE.splitlines())
    origin = (
        "the reference's four, taken from the train split"
        if few_shot_source == "reference"
        else f"the first {len(shots)} train problems: this GSM8K copy lacks the reference's four"
    )
    return f"""# Task: GSM8K (grade-school math word problems), the reference protocol

Post-train the base model so it solves grade-school math word problems: multi-step arithmetic
in plain language, with one numeric answer each.

## Data

`data/train.jsonl`: {n_train} training problems, {source}. One JSON object per line:

    {{"id": "train-00000", "question": "...", "answer": "288",
      "solution": "step-by-step reasoning ...\\n#### 288"}}

The grader scores your checkpoints on {n_eval} held-out problems that you never see.

## Metric: exact match of the final number (accuracy, in percent), as the reference grades

For each held-out question the grader:

1. sends, through the model's own chat template, {len(shots)} worked examples as earlier turns
   ({origin}), each a user turn in the form below and an assistant turn with its solution
   ending `The answer is N`, then the question as the last user turn:

{prompt}

2. decodes greedily for at most {max_new_tokens} new tokens, stopping at the end-of-turn token;
3. extracts the answer: drops any `<think>...</think>`, keeps the text before the first
   `Question:`, and takes the last number in it (digits with an optional decimal part; a
   thousands separator splits a number, so `1,000` reads as `000`);
4. counts it correct when it equals the gold answer.

So answers should reason step by step, end with `The answer is <number>`, and stop there.

## Kit

`kit/autorl_kit.py` (standard library only, on `PYTHONPATH`) holds the grader's logic, set to
this protocol by `kit/config.json` (which also holds the worked examples):
`build_messages(question)` (the whole prompt above, worked examples included),
`extract_answer(text)`, `is_correct(completion, answer)`, `load_train()`, and a train-time
`reward(completion, answer)`: 1.0 for the right number, {FORMAT_REWARD} for a wrong number
after `The answer is` (shaping only), else 0.0; `trl_reward` wraps it for TRL's `GRPOTrainer`.
Editing the workspace copy does not change grading: the grader uses its own installed copy.

## Checkpoints

Save a full Hugging Face model directory (weights, `config.json`, tokenizer files, chat
template) or a PEFT LoRA adapter under `output/` and submit it through the grading API.
"""
