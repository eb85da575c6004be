"""The DeepSearchQA environment: one question per session, ``search[...]`` then ``answer[...]``.

Gym-like and text only: ``obs, info = env.reset(session_id)`` shows the question;
``obs, reward, done, info = env.step("search[Ada Brimsel]")`` shows the top ``top_k`` hits
(title and snippet); ``env.step("answer[Keldia]")`` ends the episode with reward 1.0 when the
judge accepts the answer (``info["success"]``), else 0.0. An action that is neither (or has an
empty argument) changes nothing, says why and uses a step. After ``max_steps`` steps without an
answer the episode ends unanswered (reward 0).

The search and the judge are injected (``search(query, k) -> [{"title", "snippet", "url"}]``,
``grade(question, response) -> {"correct": bool, "judge": str, ...}``) so the grader, the kit and
tests share this class with different backends. Standard library only (copied into the kit).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .corpus import Question
from .rules import rule_correct

DEFAULT_MAX_STEPS = 6
DEFAULT_TOP_K = 3
ECHO_CHARS = 40
"""An invalid action is echoed cut to this length, so a rambling reply does not fill the prompt."""
ACTION_RE = re.compile(r"^\s*(search|answer)\s*\[(.*)\]\s*$", re.IGNORECASE | re.DOTALL)

SearchFn = Callable[[str, int], list[dict[str, str]]]
GradeFn = Callable[[Question, str], Mapping[str, Any]]


def parse_action(text: str) -> tuple[str, str] | None:
    """``("search"|"answer", argument)`` of an action string, or None when it is malformed."""
    match = ACTION_RE.match(text or "")
    if match is None:
        return None
    return match.group(1).lower(), " ".join(match.group(2).split())


def rule_grade(question: Question, response: str) -> dict[str, Any]:
    """The offline judge as a ``grade`` function (labelled ``judge: "rule"``)."""
    return {
        "correct": rule_correct(response, question.answer, question.answer_type),
        "judge": "rule",
    }


def judged(grade: GradeFn, question: Question, answer: str) -> tuple[bool, dict[str, Any]]:
    """``grade``'s verdict on an answer: whether it is correct, and the judge's other fields as
    info keys (``judge`` as is, the rest prefixed ``judge_``)."""
    verdict = dict(grade(question, answer))
    correct = bool(verdict.pop("correct"))
    return correct, {f"judge_{k}" if k != "judge" else k: v for k, v in verdict.items()}


def episode_info(
    question: Question, steps: int, searches: int, reward: float | None, **extra: Any
) -> dict[str, Any]:
    """A step's info: the session, its steps and searches, ``success`` once the episode is
    over (``reward`` given), then ``extra``."""
    info: dict[str, Any] = {"session_id": question.session_id, "steps": steps, "searches": searches}
    if reward is not None:
        info["success"] = reward >= 1.0
    info.update(extra)
    return info


def format_hits(query: str, hits: list[dict[str, str]]) -> str:
    if not hits:
        return f'No results for "{query}". Try other keywords.'
    lines = [f'Search results for "{query}":']
    for n, hit in enumerate(hits, 1):
        lines.append(f"[{n}] {hit.get('title', '').strip()}: {hit.get('snippet', '').strip()}")
    return "\n".join(lines)


@dataclass
class _Session:
    question: Question
    steps: int = 0
    searches: list[str] = field(default_factory=list)
    done: bool = False
    reward: float = 0.0


class DeepSearchQAEnv:
    """One question at a time over a fixed set of questions."""

    def __init__(
        self,
        questions: Iterable[Question],
        search: SearchFn,
        grade: GradeFn = rule_grade,
        max_steps: int = DEFAULT_MAX_STEPS,
        top_k: int = DEFAULT_TOP_K,
    ) -> None:
        if max_steps < 1 or top_k < 1:
            raise ValueError(f"max_steps and top_k must be >= 1, got {max_steps} and {top_k}")
        self.questions: dict[str, Question] = {}
        for question in questions:
            if question.session_id in self.questions:
                raise ValueError(f"duplicate session id {question.session_id!r}")
            self.questions[question.session_id] = question
        self.search = search
        self.grade = grade
        self.max_steps = max_steps
        self.top_k = top_k
        self._session: _Session | None = None

    @property
    def session_ids(self) -> list[str]:
        return list(self.questions)

    @property
    def question(self) -> Question:
        return self._require_session().question

    def lookup(self, session_id: str) -> Question:
        """The question of ``session_id``; KeyError naming the sessions this env holds."""
        question = self.questions.get(session_id)
        if question is None:
            known = list(self.questions)
            sample = ", ".join(known[:3]) + (", ..." if len(known) > 3 else "")
            raise KeyError(
                f"unknown DeepSearchQA session id {session_id!r}: this environment holds "
                f"{len(known)} sessions ({sample}); pick one of env.session_ids"
            )
        return question

    def reset(self, session_id: str) -> tuple[str, dict[str, Any]]:
        """Start ``session_id``; the observation is the question."""
        question = self.lookup(session_id)
        self._session = _Session(question=question)
        return f"Question: {question.question}", self._info(valid=True)

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        """Apply one action; returns ``(observation, reward, done, info)``."""
        session = self._require_session()
        if session.done:
            return (
                "The episode is over. Call reset(session_id) to start another question.",
                0.0,
                True,
                self._info(valid=False, error="episode already over"),
            )
        session.steps += 1
        parsed = parse_action(action)
        if parsed is None or not parsed[1]:
            shown = action if len(action) <= ECHO_CHARS else action[:ECHO_CHARS] + "..."
            error = (
                f"{shown!r} is not an action"
                if parsed is None
                else f"{parsed[0]}[] needs an argument"
            )
            return self._invalid(session, error)
        verb, argument = parsed
        if verb == "answer":
            return self._answer(session, argument)
        session.searches.append(argument)
        observation = format_hits(argument, self.search(argument, self.top_k))
        if session.steps >= self.max_steps:
            return self._out_of_steps(session, observation, valid=True)
        if session.steps == self.max_steps - 1:
            observation += "\nOne step left: answer now."
        return observation, 0.0, False, self._info(valid=True)

    # internals ---------------------------------------------------------------------------------

    def _answer(self, session: _Session, response: str) -> tuple[str, float, bool, dict[str, Any]]:
        correct, judge = judged(self.grade, session.question, response)
        session.done = True
        session.reward = 1.0 if correct else 0.0
        info = self._info(valid=True, answered=True, answer=response, correct=correct, **judge)
        text = "Correct." if correct else "Not correct."
        return f"Answer recorded: {response}. {text}", session.reward, True, info

    def _invalid(self, session: _Session, error: str) -> tuple[str, float, bool, dict[str, Any]]:
        observation = f"Invalid action: {error}. Reply with search[<keywords>] or answer[<answer>]."
        if session.steps >= self.max_steps:
            return self._out_of_steps(session, observation, valid=False, error=error)
        return observation, 0.0, False, self._info(valid=False, error=error)

    def _out_of_steps(
        self, session: _Session, observation: str, **extra: Any
    ) -> tuple[str, float, bool, dict[str, Any]]:
        session.done = True
        observation += f"\nOut of steps ({self.max_steps}): no answer was given."
        return observation, 0.0, True, self._info(answered=False, truncated=True, **extra)

    def _info(self, **extra: Any) -> dict[str, Any]:
        session = self._require_session()
        reward = session.reward if session.done else None
        return episode_info(session.question, session.steps, len(session.searches), reward, **extra)

    def _require_session(self) -> _Session:
        if self._session is None:
            raise RuntimeError("call reset(session_id) before step()")
        return self._session
