"""AlpacaEval workspace kit: the eval prompt and the train loader.

A single-module kit (:mod:`autorl_task_common.kitio` says how it ships): the grader's protocol,
which the ``judge`` evaluator imports from the installed ``autorl_task_alpacaeval.kit``, and the
agent's ``kit/autorl_kit.py``. Standard library only.

The prompt is AlpacaEval's: the instruction alone as one user message, through the model's own
chat template, no system message. There is no train-time reward here: the reward of this task is
an LLM judge that stays on the grader's side.
"""

from __future__ import annotations

import os
from typing import Any

from autorl_task_common import kitio
from autorl_task_common.kitio import read_jsonl as read_jsonl  # part of the kit's API


def prompt_text(instruction: str, input: str = "") -> str:
    """The user message for one instruction; an Alpaca ``input`` follows it after a blank line
    (AlpacaEval's own prompts have no separate input: they are instruction only)."""
    instruction = instruction.strip()
    extra = (input or "").strip()
    return f"{instruction}\n\n{extra}" if extra else instruction


def build_messages(instruction: str, input: str = "") -> list[dict[str, str]]:
    """The exact chat prompt the evaluator uses (one user message, no system message)."""
    return [{"role": "user", "content": prompt_text(instruction, input)}]


def load_train(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The train split: dicts with ``id``, ``instruction``, ``input`` (often empty) and
    ``output`` (a good answer to imitate).
    (``data/train.jsonl`` of the workspace by default: :func:`autorl_task_common.kitio.load_train`).
    """
    return kitio.load_train(path)
