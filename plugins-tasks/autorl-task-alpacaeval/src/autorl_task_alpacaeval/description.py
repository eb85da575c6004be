"""The agent-facing ``description.md``: the task, the data, how answers are judged and scored.

The agent may know how it is graded (prompt, decoding, judge protocol, metric), never the eval
data, the judge's credentials or its cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SOURCES = {
    "offline": (
        "an offline instruction set written for autorl (how-to questions, rewrites, lists, "
        "short explanations, classification, facts and small computations), each with a good "
        "reference answer; the held-out instructions are of the same kinds"
    ),
    "reference": (
        "the first 2,000 instructions of the Stanford Alpaca data (tatsu-lab/alpaca) with their "
        "answers; the held-out set is the 805 AlpacaEval 2.0 prompts"
    ),
}


def describe(*, split: str, n_train: int, n_eval: int, evaluator_config: Mapping[str, Any]) -> str:
    source = SOURCES["offline" if split.startswith("offline") else "reference"]
    judge = str(evaluator_config.get("judge"))
    scripted = judge.startswith("scripted/")
    judge_text = (
        "In this run the judge is **scripted** (no LLM: fixed rules that only penalise empty, "
        "repetitive or very short answers), so scores here test the pipeline, not quality."
        if scripted
        else f"In this run the judge is `{judge}`."
    )
    return f"""# Task: AlpacaEval 2.0 (instruction following)

Post-train the base model so it answers open-ended instructions helpfully: explanations,
how-to questions, rewrites, lists, classification and more.

## Data

`data/train.jsonl`: {n_train} instructions, {source}. One JSON object per line:

    {{"id": "train-0000", "instruction": "How do I boil an egg?", "input": "",
      "output": "a good answer ..."}}

`input` is optional extra context for the instruction (often empty).

The grader scores your checkpoints on {n_eval} held-out instructions that you never see.

## Metric: length-controlled win rate against reference answers (percent)

For each held-out instruction the grader:

1. sends the instruction as a single user message through the model's own chat template (with
   the generation prompt; no system message): `kit.build_messages(instruction)`;
2. decodes greedily for at most {evaluator_config.get("max_new_tokens")} new tokens, stopping
   at the end-of-turn token;
3. asks an LLM judge, with AlpacaEval 2.0's pairwise prompt, which of two answers is better:
   yours or the reference answer (which one is shown first is random per instruction);
4. computes the win rate (share of instructions where your answer is preferred) and the
   **length-controlled win rate** of AlpacaEval 2.0: a logistic model of the judge's
   preferences on the length difference predicts the win rate at equal length, so longer
   answers alone do not win. The length-controlled win rate is the score (50 = as good as the
   references).

{judge_text}

## Kit

`kit/autorl_kit.py` (standard library only, on `PYTHONPATH`): `build_messages(instruction,
input="")` (the exact prompt), `prompt_text(...)` and `load_train()` (reads `data/train.jsonl`).
There is no train-time reward function: the judge stays on the grader's side. Editing the
workspace copy does not change grading.

## Checkpoints

Save a full Hugging Face model directory (weights, `config.json`, tokenizer files, chat
template) or a PEFT LoRA adapter under `output/` and submit it through the grading API.
"""
