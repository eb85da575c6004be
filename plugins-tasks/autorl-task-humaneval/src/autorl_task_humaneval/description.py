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

## How a checkpoint is scored

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

## Kit

`kit/autorl_kit.py` (standard library only) has the exact protocol: `load_train()`,
`build_prompt(problem)`, `extract_code(completion, problem)`, `STOP_SEQUENCES` and
`reward(completion, problem) -> float` (1.0 when the train problem's tests pass, run in a child
process with a timeout), plus `trl_reward` for TRL's `GRPOTrainer`.
"""


def describe(*, n_train: int, n_eval: int, evaluator_config: Mapping[str, Any]) -> str:
    from autorl_task_humaneval.kit import STOP_SEQUENCES

    return TEMPLATE.format(
        n_train=n_train,
        n_eval=n_eval,
        last_train=n_train - 1,
        max_new_tokens=evaluator_config["max_new_tokens"],
        timeout_s=evaluator_config["timeout_s"],
        stops=", ".join(f"`{s!r}`" for s in STOP_SEQUENCES),
    )
