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
from deepsearchqa_env.expert import expert_actions  # noqa: E402
from deepsearchqa_env.prompt import HISTORY_WINDOW, build_messages, extract_action  # noqa: E402
from deepsearchqa_env.rules import rule_correct  # noqa: E402

DATA_DIR = KIT_DIR / "deepsearchqa_data"
SETTINGS: dict[str, Any] = json.loads((DATA_DIR / "settings.json").read_text(encoding="utf-8"))
MAX_STEPS: int = SETTINGS["max_steps"]
TOP_K: int = SETTINGS["top_k"]
SUCCESS_THRESHOLD = 1.0

__all__ = [
    "HISTORY_WINDOW",
    "MAX_STEPS",
    "SUCCESS_THRESHOLD",
    "TOP_K",
    "DeepSearchQAEnv",
    "Document",
    "Question",
    "build_messages",
    "expert_actions",
    "expert_episode",
    "extract_action",
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


def make_env(max_steps: int = MAX_STEPS, top_k: int = TOP_K) -> DeepSearchQAEnv:
    """The environment on the train questions with the grader's step limit and result count."""
    return DeepSearchQAEnv(_train(), search, rule_grade, max_steps=max_steps, top_k=top_k)


def expert_episode(
    session_id: str, env: DeepSearchQAEnv | None = None, history_window: int = HISTORY_WINDOW
) -> dict[str, Any]:
    """The expert on one train question, as SFT data in the grader's prompt format.

    ``{"session_id", "reward", "success", "steps": [{"messages": [...], "action": "..."}]}``:
    each step's ``messages`` is exactly what the evaluator would send before that action.
    """
    env = env or make_env()

    def actions() -> Iterator[str]:  # read once the reset has chosen the question
        yield from expert_actions(env.question, env.max_steps)

    return play_expert(env, session_id, actions(), build_messages, history_window)
