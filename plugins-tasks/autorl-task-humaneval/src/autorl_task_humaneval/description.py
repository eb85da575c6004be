"""The task description the agent reads as ``description.md``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TEMPLATE = """# Task: HumanEval (Python code generation)

Post-train the base model so it completes Python functions that pass hidden unit tests.

## Data

`data/train.jsonl`: {n_train} problems (HumanEval/0 to HumanEval/{last_train}), one JSON object per
line with `task_id`, `prompt` (imports, the function signature and its docstring),
`canonical_solution` (a correct body), `test` (a `check(candidate)` function of assertions) and
`entry_point` (the function's name). You may train on all of it, solutions included. Scoring uses
the other {n_eval} problems, which you never see.

{scoring}## Kit

`kit/autorl_kit.py` (standard library only) has the exact protocol: `load_train()`,
`build_prompt(problem)`, `extract_code(completion, problem)`, `STOP_SEQUENCES` and
`reward(completion, problem) -> float` (1.0 when the train problem's tests pass, run in a child
process with a timeout), plus `trl_reward` for TRL's `GRPOTrainer`.
{kit_extra}"""

COMPLETION_SCORING = """## How a checkpoint is scored

* Prompt: the problem's `prompt` as plain text, exactly as given (no chat template, no system
  message, no few-shot examples). The model continues it with the function body.
* Decoding: greedy, at most {max_new_tokens} new tokens, stopped at any of
  {stops}.
* Extraction: if the output contains a Markdown code block, the block's code is placed after the
  prompt (its `def {{entry_point}}` replaces the stub); otherwise the prompt followed by the
  output, cut at the first stop sequence, is the candidate.
* Execution: candidate + `test` + `check(entry_point)` run in a fresh sandboxed process (no
  network, {timeout_s:g} s time limit, memory and file-size limits). A problem passes when the
  program finishes without an exception.
* Metric: **pass@1**, the percentage of held-out problems that pass (higher is better).

"""

REFERENCE_SCORING = """## How a checkpoint is scored (the reference: OpenCompass `humaneval_gen`)

* Prompt: one user turn through the model's chat template (with the generation prompt; no system
  message, no few-shot examples): the instruction
  `{instruction!r}`
  followed by the problem's `prompt`, exactly as given.
* Decoding: greedy, at most {max_new_tokens} new tokens, stopped only by the model's end-of-turn
  token.
* Extraction: `<think>...</think>` reasoning is removed, then the first Markdown code block
  (a fence line like ```` ```python ````, closed by ```` ``` ````) is taken, else the whole reply;
  leading whitespace is removed. The candidate is the problem's `prompt` followed by that code,
  so reply with the **whole function** (its `def` line included) in one code block: it
  redefines the stub. A bare body (indented lines) loses its first line's indentation and
  usually fails.
* Execution: candidate + `test` + `check(entry_point)` run in a fresh sandboxed process (no
  network, {timeout_s:g} s time limit, memory and file-size limits). A problem passes when the
  program finishes without an exception.
* Metric: **pass@1**, the percentage of held-out problems that pass (higher is better).

"""

REFERENCE_KIT = """
This workspace uses the reference prompt: `build_prompt(problem)` returns the chat messages,
`STOP_SEQUENCES` is empty, `answer_text(problem, body)` is a passing reply for a correct body
(the function in a ```` ```python ```` block) and `prompt_ids(problem, tokenizer)` the token ids
the grader generates from.
"""


def describe(
    *, n_train: int, n_eval: int, evaluator_config: Mapping[str, Any], prompt: str = "completion"
) -> str:
    from autorl_task_humaneval.kit import COMPLETION_STOP_SEQUENCES, REFERENCE_INSTRUCTION

    reference = prompt == "reference"
    scoring = REFERENCE_SCORING if reference else COMPLETION_SCORING
    return TEMPLATE.format(
        n_train=n_train,
        n_eval=n_eval,
        last_train=n_train - 1,
        scoring=scoring.format(
            max_new_tokens=evaluator_config["max_new_tokens"],
            timeout_s=evaluator_config["timeout_s"],
            stops=", ".join(f"`{s!r}`" for s in COMPLETION_STOP_SEQUENCES),
            instruction=REFERENCE_INSTRUCTION,
        ),
        kit_extra=REFERENCE_KIT if reference else "",
    )
