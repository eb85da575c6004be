"""DeepSearchQA workspace kit (copied as ``workspace/kit/autorl_kit.py``): TRAIN questions only.

Next to this file the task puts ``deepsearchqa_env/`` (the environment's modules: the same files
the grader imports from the installed package) and ``deepsearchqa_data/`` (the encyclopedia, the
train questions and the grader's settings; the eval questions are not there, so
``make_env().reset(<eval id>)`` fails with KeyError). The kit's reward is the rule judge.

    import sys; sys.path.insert(0, "kit")
    import autorl_kit as kit
    env = kit.make_env()
    obs, info = env.reset(kit.train_ids()[0])
    obs, reward, done, info = env.step("search[Ada Brimsel]")
    episode = kit.expert_episode(kit.train_ids()[0])   # SFT data in the grader's prompt format
    prompt = kit.grader_prompt(session_id, observations, actions)   # exactly what the grader sends

``PROMPT`` says which prompt the grader uses in this run: ``chat`` (``build_messages``, through
the chat template, one action per reply) or ``reference`` (the reference implementation's
raw-text ReAct loop, no chat template: ``make_env()`` then plays that loop, its actions are
whole replies such as ``"I need to look this up. Action: search[Ada Brimsel]"``, and its
observations are the text the loop appends, so the prompt is the observations joined).

Needs ``rank_bm25`` (pip install rank_bm25) for the search index; the rest is standard library.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

KIT_DIR = Path(__file__).resolve().parent
if str(KIT_DIR) not in sys.path:
    sys.path.insert(0, str(KIT_DIR))

from autorl_task_common.react import play_expert  # noqa: E402
from deepsearchqa_env.bm25 import BM25Index  # noqa: E402
from deepsearchqa_env.corpus import Document, Question, load_documents, load_questions  # noqa: E402
from deepsearchqa_env.env import DeepSearchQAEnv, parse_action, rule_grade  # noqa: E402
from deepsearchqa_env.env_reference import ReferenceEnv  # noqa: E402
from deepsearchqa_env.expert import expert_actions  # noqa: E402
from deepsearchqa_env.prompt import HISTORY_WINDOW, build_messages, extract_action  # noqa: E402
from deepsearchqa_env.prompt_reference import (  # noqa: E402
    STOP as REFERENCE_STOP,
)
from deepsearchqa_env.prompt_reference import (  # noqa: E402
    build_reference_prompt,
    expert_reply,
)
from deepsearchqa_env.rules import rule_correct  # noqa: E402

DATA_DIR = KIT_DIR / "deepsearchqa_data"
SETTINGS: dict[str, Any] = json.loads((DATA_DIR / "settings.json").read_text(encoding="utf-8"))
MAX_STEPS: int = SETTINGS["max_steps"]
TOP_K: int = SETTINGS["top_k"]
PROMPT: str = str(SETTINGS.get("prompt", "chat"))
"""The grader's prompt in this run: ``chat`` or ``reference`` (raw text, no chat template)."""
SUCCESS_THRESHOLD = 1.0

__all__ = [
    "HISTORY_WINDOW",
    "MAX_STEPS",
    "PROMPT",
    "REFERENCE_STOP",
    "SUCCESS_THRESHOLD",
    "TOP_K",
    "DeepSearchQAEnv",
    "Document",
    "Question",
    "ReferenceEnv",
    "build_messages",
    "expert_actions",
    "expert_episode",
    "extract_action",
    "grader_action",
    "grader_prompt",
    "grader_reply",
    "load_train",
    "make_env",
    "parse_action",
    "rule_correct",
    "search",
    "train_ids",
]


@lru_cache(maxsize=1)
def _index() -> BM25Index:
    return BM25Index(load_documents(DATA_DIR / "corpus.json"))


@lru_cache(maxsize=1)
def _train() -> tuple[Question, ...]:
    return tuple(load_questions(DATA_DIR / "questions_train.json"))


def load_train() -> list[Question]:
    """The train questions: text, gold answer items, answer type, supporting searches."""
    return list(_train())


def train_ids() -> list[str]:
    return [q.session_id for q in _train()]


def search(query: str, k: int = TOP_K) -> list[dict[str, str]]:
    """BM25 over the shipped encyclopedia: ``[{"title", "snippet", "url"}]``."""
    return _index().search(query, k)


def make_env(max_steps: int = MAX_STEPS, top_k: int = TOP_K) -> DeepSearchQAEnv | ReferenceEnv:
    """The environment on the train questions with the grader's prompt mode, step limit and
    result count (the reference's loop when ``PROMPT == "reference"``); rule-judge reward."""
    env_class = ReferenceEnv if PROMPT == "reference" else DeepSearchQAEnv
    return env_class(_train(), search, rule_grade, max_steps=max_steps, top_k=top_k)


def grader_prompt(
    session_id: str, observations: list[str], actions: list[str]
) -> list[dict[str, str]] | str:
    """Exactly what the grader sends before the next action: chat messages (``chat``) or, with
    the reference prompt, the raw text to continue (the observations joined: the reference's
    ``full_prompt``). ``session_id`` is not needed; it is in the kit contract."""
    if PROMPT != "reference":
        return build_messages(observations, actions, HISTORY_WINDOW)
    return build_reference_prompt(observations)


def grader_action(reply: str) -> str | None:
    """What the grader sends to the environment for a reply: with the reference prompt the
    whole reply (the environment reads the action as the reference does); in chat, the first
    ``search[...]``/``answer[...]`` (None: none)."""
    return reply if PROMPT == "reference" else extract_action(reply)


def grader_reply(action: str) -> str:
    """The reply text that takes ``action``. Reference prompt: the prompt ends with
    ``Thought:``, so the reply is `` <thought> Action: verb[...]`` and then
    ``\\nObservation:``, one of the grader's stop strings, so generation ends there (the
    grader drops it); in chat, the action itself."""
    return f" {action}{REFERENCE_STOP[2]}" if PROMPT == "reference" else action


def expert_episode(
    session_id: str,
    env: DeepSearchQAEnv | ReferenceEnv | None = None,
    history_window: int = HISTORY_WINDOW,
) -> dict[str, Any]:
    """The expert on one train question, as SFT data in the grader's prompt format.

    ``{"session_id", "reward", "success", "steps": [{"messages", "prompt", "action"}]}``:
    each step's ``prompt`` is exactly what the evaluator would send before that action
    (:func:`grader_prompt`; ``messages`` the same with the chat prompt). With the reference
    prompt each action is a whole reply (a short thought and ``Action: verb[...]`` on one line,
    :func:`expert_reply`) and ``messages`` is the raw text too.
    """
    env = env or make_env()
    reference = PROMPT == "reference"

    def actions() -> Iterator[str]:  # read once the reset has chosen the question
        for action in expert_actions(env.question, env.max_steps):
            yield expert_reply(action) if reference else action

    def build(observations: Any, taken: Any, window: int) -> Any:
        if reference:
            return grader_prompt(session_id, list(observations), list(taken))
        return build_messages(observations, taken, window)

    episode = play_expert(env, session_id, actions(), build, history_window)
    for step in episode["steps"]:
        step["prompt"] = step["messages"]
    return episode
