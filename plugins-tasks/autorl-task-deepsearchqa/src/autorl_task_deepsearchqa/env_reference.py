"""The reference's ReAct loop as an environment (task option ``prompt = "reference"``).

It plays RD-Agent's ``_react_loop`` (``benchmarks/deepsearchqa/eval.py``, commit 471eb30) one
model reply per ``step``, keeping the reference's ``full_prompt`` and ``model_trace`` itself:

* ``reset`` returns the first ``full_prompt``; every ``step(reply)`` returns what it appended to
  ``full_prompt``, so the next prompt is the concatenation of the observations
  (:func:`prompt_reference.build_reference_prompt`);
* a reply is stripped and appended after a space; its first ``Action: search[...]`` /
  ``Action: answer[...]`` is the action. A search appends ``\\nObservation: <snippets>\\nThought:``;
  an answer ends the episode (``your final answer`` appends the reference's refusal instead);
* a reply without an action appends ``\\nAction: answer[`` and the NEXT reply is the forced
  answer (not a step): it is cut at its first ``]`` and stripped; it ends the episode unless it
  is the placeholder, when the loop goes on with that suffix left in the prompt;
* after ``max_steps`` steps the answer is the last non-placeholder ``answer[...]`` of the model
  trace, else ``I don't know``; it is judged like any other (as the reference does).

The forced answer is generated with the step's settings (256 tokens, the step's stops) and cut
here; the reference gives it its own 128 tokens and ``stop=["]"]`` (docs/tasks/deepsearchqa.md
says where this can differ). Standard library only (copied into the workspace kit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import prompt_reference as ref
from .corpus import Question
from .env import (
    DeepSearchQAEnv,
    episode_info,
    judged,
)


def answer_type(question: Question) -> str:
    """The answer type as the data set writes it (``Single Answer`` / ``Set Answer``)."""
    return question.type_label or ref.ANSWER_TYPES[question.answer_type]


def gold_answer(question: Question) -> str:
    """The gold answer as the data set writes it (our items joined by ``, `` otherwise)."""
    return question.answer_text or question.gold_text


@dataclass
class _Loop:
    question: Question
    full_prompt: str
    model_trace: str = ""
    steps: int = 0
    searches: int = 0
    forced: bool = False
    """The next reply is the forced answer (the prompt ends with ``\\nAction: answer[``)."""
    done: bool = False
    reward: float = 0.0


class ReferenceEnv(DeepSearchQAEnv):
    """One question at a time, played as the reference's loop; actions are whole replies. The
    questions, search, judge and limits are :class:`DeepSearchQAEnv`'s; the loop is its own."""

    _loop: _Loop | None = None
    """The episode being played (None before the first ``reset``)."""

    @property
    def question(self) -> Question:
        return self._require().question

    @property
    def full_prompt(self) -> str:
        """The reference's ``full_prompt`` now (the next prompt)."""
        return self._require().full_prompt

    @property
    def model_trace(self) -> str:
        return self._require().model_trace

    def reset(self, session_id: str) -> tuple[str, dict[str, Any]]:
        """Start ``session_id``; the observation is the reference's first prompt."""
        question = self.lookup(session_id)
        start = ref.start_prompt(question.question, answer_type(question))
        self._loop = _Loop(question=question, full_prompt=start)
        return start, self._info(valid=True)

    def step(self, reply: str) -> tuple[str, float, bool, dict[str, Any]]:
        """Apply one model reply; returns ``(appended text, reward, done, info)``."""
        loop = self._require()
        if loop.done:
            return "", 0.0, True, self._info(valid=False, error="episode already over")
        if loop.forced:
            return self._forced(loop, reply)
        loop.steps += 1
        generated = (reply or "").strip()
        loop.model_trace += ("\n" + generated) if loop.model_trace else generated
        appended = f" {generated}"
        parsed = ref.parse_reply(generated)
        if parsed is None:
            loop.forced = True
            return self._append(loop, appended + ref.FORCED_ANSWER, valid=False, forced=True)
        verb, content = parsed
        if verb == "answer":
            if ref.is_placeholder(content):
                return self._go_on(loop, appended + ref.INVALID_ANSWER, valid=False)
            return self._finish(loop, content, answered=True)
        loop.searches += 1
        hits = self.search(content, self.top_k)
        observation = ref.observation_text([str(h.get("snippet", "")) for h in hits])
        return self._go_on(loop, appended + ref.search_suffix(observation), valid=True)

    # internals ---------------------------------------------------------------------------------

    def _forced(self, loop: _Loop, reply: str) -> tuple[str, float, bool, dict[str, Any]]:
        loop.forced = False
        answer = ref.cut_forced_answer(reply or "")
        loop.model_trace += ("\n" + answer) if answer else ""
        if ref.is_placeholder(answer):  # the reference goes on; the suffix stays in the prompt
            return self._go_on(loop, "", valid=False)
        return self._finish(loop, answer, answered=True)

    def _append(
        self, loop: _Loop, text: str, **extra: Any
    ) -> tuple[str, float, bool, dict[str, Any]]:
        loop.full_prompt += text
        return text, 0.0, False, self._info(**extra)

    def _go_on(
        self, loop: _Loop, text: str, **extra: Any
    ) -> tuple[str, float, bool, dict[str, Any]]:
        """Continue to the next step, or end with the trace's last answer after the last one."""
        if loop.steps >= self.max_steps:
            loop.full_prompt += text
            return self._finish(loop, ref.last_answer(loop.model_trace), answered=False, **extra)
        return self._append(loop, text, **extra)

    def _finish(
        self, loop: _Loop, predicted: str, *, answered: bool, **extra: Any
    ) -> tuple[str, float, bool, dict[str, Any]]:
        correct, judge = judged(self.grade, loop.question, predicted)
        loop.done = True
        loop.reward = 1.0 if correct else 0.0
        info = self._info(
            answered=answered,
            judged=True,
            answer=predicted,
            correct=correct,
            truncated=not answered,
            **{"valid": True, **extra},
            **judge,
        )
        text = "Correct." if correct else "Not correct."
        return f"\nPredicted: {predicted}. {text}", loop.reward, True, info

    def _info(self, **extra: Any) -> dict[str, Any]:
        loop = self._require()
        reward = loop.reward if loop.done else None
        return episode_info(loop.question, loop.steps, loop.searches, reward, **extra)

    def _require(self) -> _Loop:
        if self._loop is None:
            raise RuntimeError("call reset(session_id) before step()")
        return self._loop
