"""GSM8K workspace kit: the eval prompt, the answer extraction, the train reward, the train loader.

A single-module kit (:mod:`autorl_task_common.kitio` says how it ships): the grader's protocol,
which the ``exact`` evaluator imports from the installed ``autorl_task_gsm8k.kit``, and the agent's
``kit/autorl_kit.py``. Standard library only.

Metric: exact match of the final number. The evaluator sends ``build_messages(question)`` through
the model's chat template, decodes greedily, applies ``extract_answer`` to the output and compares
``normalize_number`` of both sides.

Two protocols: autorl's (zero-shot, ``#### N``; the offline splits) and the reference's on real
GSM8K (OpenCompass ``gsm8k_gen``: four worked examples as earlier chat turns, ``Question: ...
Let's think step by step / Answer:``, the last number before any next ``Question:``). The
installed module's functions are autorl's and ``REFERENCE`` is the reference's (the contract
``autorl_task_gsm8k.kit:REFERENCE``; the evaluator adds the worked examples from its
``few_shot`` option). The workspace copy reads ``config.json`` beside it, which names the run's
protocol and its worked examples, so ``build_messages`` there is the whole prompt the grader sends.
"""

from __future__ import annotations

import os
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from autorl_task_common import kitio
from autorl_task_common.kitio import completion_text, kit_config
from autorl_task_common.kitio import read_jsonl as read_jsonl  # part of the kit's API

PROMPT_TEMPLATE = (
    "{question}\n\n"
    "Solve the problem step by step. "
    'End your answer with a final line of the form "#### <number>".'
)
"""The user message the evaluator sends for each question (no system message, no few-shot)."""

FINAL_ANSWER_RE = re.compile(r"####\s*\$?\s*([-+]?[0-9][0-9,]*(?:\.[0-9]+)?)")
"""``#### N``: the marked final answer (GSM8K's own solution format)."""

NUMBER_RE = re.compile(r"-?[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?")
"""Any number, with optional thousands separators; used when no ``#### N`` is present."""

FORMAT_REWARD = 0.1
"""What ``reward`` gives a wrong answer that still ends in a well-formed ``#### N`` line.

A shaping term for training only: the evaluator counts exact matches and nothing else.
"""


REFERENCE_TEMPLATE = "Question: {question}\nLet's think step by step\nAnswer:"
"""The reference's user turn (OpenCompass ``gsm8k_gen``), for worked examples and the question."""

REFERENCE_FINAL_RE = re.compile(r"The answer is\s*\$?\s*(-?[0-9][0-9,]*(?:\.[0-9]+)?)")
"""``The answer is N``: how the reference's worked examples end (its format rate counts this)."""

REFERENCE_NUMBER_RE = re.compile(r"-?\d+\.\d+|-?\d+")
"""The reference's number pattern (no thousands separators: ``1,000`` reads as ``000``)."""

THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL)
"""Reasoning blocks, removed before the reference's extraction (its cot post-processor)."""


def build_messages(question: str) -> list[dict[str, str]]:
    """The exact chat prompt the evaluator uses for ``question``."""
    return [{"role": "user", "content": PROMPT_TEMPLATE.format(question=question.strip())}]


def normalize_number(text: str | None) -> str | None:
    """Canonical form of a number: no commas, ``$`` or ``+``, no trailing zeros (``5.0`` -> ``5``).

    Returns None when ``text`` is not a number.
    """
    if text is None:
        return None
    cleaned = text.strip().replace(",", "").replace("$", "").rstrip(".")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


normalize = normalize_number
"""The 'answer' contract's normal form (``autorl_evaluator_exact.contract.AnswerContract``):
a number's."""


def extract_answer(text: str) -> str | None:
    """The final number of a completion, normalised; None when it holds no number.

    Prefers the first ``#### N`` (the committed answer: writing several does not help), else the
    last number in the text.
    """
    marked = FINAL_ANSWER_RE.search(text)
    if marked:
        return normalize_number(marked.group(1))
    numbers = NUMBER_RE.findall(text)
    return normalize_number(numbers[-1]) if numbers else None


def has_final_answer_line(text: str) -> bool:
    """Whether ``text`` marks its answer with ``#### N`` (the evaluator reports this rate)."""
    return FINAL_ANSWER_RE.search(text) is not None


def is_correct(completion: str, answer: str) -> bool:
    """Exact match of the extracted final number with the gold answer (the eval metric)."""
    predicted = extract_answer(completion)
    return predicted is not None and predicted == normalize_number(answer)


def reward(completion: str, answer: str) -> float:
    """Train-time reward: 1.0 for the right final number, ``FORMAT_REWARD`` for a wrong answer
    in ``#### N`` form (shaping only), else 0.0."""
    if is_correct(completion, answer):
        return 1.0
    return FORMAT_REWARD if has_final_answer_line(completion) else 0.0


def trl_reward(completions: list[Any], answer: list[str], **_: Any) -> list[float]:
    """``reward`` in TRL's reward-function shape (``GRPOTrainer(reward_funcs=[trl_reward])``);
    ``answer`` is the dataset column of that name."""
    return [reward(completion_text(c), a) for c, a in zip(completions, answer, strict=True)]


def load_train(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The train split: dicts with ``id``, ``question``, ``answer`` (final number as a string)
    and ``solution`` (chain of thought ending in ``#### N``).
    (``data/train.jsonl`` of the workspace by default: :func:`autorl_task_common.kitio.load_train`).
    """
    return kitio.load_train(path)


_autorl_extract_answer = extract_answer
_autorl_has_final_answer_line = has_final_answer_line


class Protocol:
    """One way of asking and reading: ``"autorl"`` (the functions above) or ``"reference"``,
    with the worked examples shown before each question (``[{"question", "solution"}]``)."""

    def __init__(self, name: str = "autorl", few_shot: list[dict[str, str]] | None = None):
        if name not in ("autorl", "reference"):
            raise ValueError(f"unknown GSM8K protocol {name!r}: 'autorl' or 'reference'")
        self.name = name
        self.few_shot = [dict(shot) for shot in few_shot or []]

    def user_turn(self, question: str) -> str:
        if self.name == "reference":
            return REFERENCE_TEMPLATE.format(question=question.strip())
        return PROMPT_TEMPLATE.format(question=question.strip())

    def build_messages(self, question: str) -> list[dict[str, str]]:
        """The worked examples as earlier user/assistant turns, then the question."""
        messages: list[dict[str, str]] = []
        for shot in self.few_shot:
            messages.append({"role": "user", "content": self.user_turn(shot["question"])})
            messages.append({"role": "assistant", "content": shot["solution"]})
        return [*messages, {"role": "user", "content": self.user_turn(question)}]

    def extract_answer(self, text: str) -> str | None:
        if self.name != "reference":
            return _autorl_extract_answer(text)
        before = THINK_RE.sub("", text).split("Question:")[0]
        numbers = REFERENCE_NUMBER_RE.findall(before)
        return normalize_number(numbers[-1]) if numbers else None

    def normalize(self, answer: str) -> str | None:
        return normalize_number(answer)

    def has_final_answer_line(self, text: str) -> bool:
        if self.name != "reference":
            return _autorl_has_final_answer_line(text)
        return REFERENCE_FINAL_RE.search(text) is not None

    def is_correct(self, completion: str, answer: str) -> bool:
        predicted = self.extract_answer(completion)
        return predicted is not None and predicted == normalize_number(answer)

    def reward(self, completion: str, answer: str) -> float:
        if self.is_correct(completion, answer):
            return 1.0
        return FORMAT_REWARD if self.has_final_answer_line(completion) else 0.0

    def trl_reward(self, completions: list[Any], answer: list[str], **_: Any) -> list[float]:
        pairs = zip(completions, answer, strict=True)
        return [self.reward(completion_text(c), a) for c, a in pairs]


REFERENCE = Protocol("reference")
"""The reference's protocol without its worked examples (the evaluator's ``few_shot`` adds them)."""


def _workspace_protocol() -> Protocol | None:
    """The run's protocol when this file is a workspace copy with ``config.json`` beside it."""
    settings = kit_config(__file__)
    if settings is None:
        return None
    return Protocol(settings.get("protocol", "autorl"), settings.get("few_shot"))


ACTIVE = _workspace_protocol()
"""This copy's protocol when a run configured it (the reference's, on real GSM8K)."""
if ACTIVE is not None and (ACTIVE.name != "autorl" or ACTIVE.few_shot):
    kitio.serve_protocol(
        globals(),
        ACTIVE,
        (
            "build_messages",
            "extract_answer",
            "has_final_answer_line",
            "is_correct",
            "reward",
            "trl_reward",
        ),
    )
    if ACTIVE.name == "reference":
        PROMPT_TEMPLATE = REFERENCE_TEMPLATE
