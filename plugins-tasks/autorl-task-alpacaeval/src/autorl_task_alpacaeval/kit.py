"""AlpacaEval workspace kit: the eval prompt and the train loader.

This one file is both the grader's prompt protocol and the agent's kit. The task copies it
verbatim into ``workspace/kit/autorl_kit.py``; the ``judge`` evaluator imports it from the
*installed* task package (``autorl_task_alpacaeval.kit``), so editing the workspace copy changes
nothing in grading.

Standard library only: the agent imports it with whatever Python it uses.

The prompt is AlpacaEval's: the instruction alone as one user message, through the model's own
chat template, no system message. There is no train-time reward here: the reward of this task is
an LLM judge that stays on the grader's side.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def prompt_text(instruction: str, input: str = "") -> str:
    """The user message for one instruction; an Alpaca ``input`` follows it after a blank line
    (AlpacaEval's own prompts have no separate input: they are instruction only)."""
    instruction = instruction.strip()
    extra = (input or "").strip()
    return f"{instruction}\n\n{extra}" if extra else instruction


def build_messages(instruction: str, input: str = "") -> list[dict[str, str]]:
    """The exact chat prompt the evaluator uses (one user message, no system message)."""
    return [{"role": "user", "content": prompt_text(instruction, input)}]


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a JSON-lines file; a bad line raises ValueError naming the file and line."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
    return rows


def load_train(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The train split: dicts with ``id``, ``instruction``, ``input`` (often empty) and
    ``output`` (a good answer to imitate).

    Default path: ``data/train.jsonl`` under ``$AUTORL_WORKSPACE`` (else the current directory).
    """
    if path is None:
        root = Path(os.environ.get("AUTORL_WORKSPACE") or ".")
        path = root / "data" / "train.jsonl"
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"train split not found at {path}; pass load_train(path=...) or set AUTORL_WORKSPACE "
            "to the workspace directory (the one holding data/train.jsonl)"
        )
    return read_jsonl(path)
