"""What the ``rollout`` evaluator imports (from the installed package, never the workspace).

Contract (A): ``load_sessions(eval_path)``, ``make_env(config, eval_path)``, ``build_messages``,
``extract_action`` and ``episode_metrics(info)``. ``config`` is the task's evaluator config:
``max_steps``, ``top_k``, ``search_backend`` (+ ``search_options``), ``corpus_path``, ``judge``
(``"rule"`` or ``"<backend>/<model>"``, + ``judge_options`` for its driver), optional
``replay`` (a records directory to replay) and ``records_dir`` (default: ``records/`` next to the
eval file, grader-only). Heavy shared state
(questions, BM25 index, judge with its cache) is built once per process and shared by every
environment slot.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl_task_deepsearchqa.corpus import Question, load_questions
from autorl_task_deepsearchqa.env import DEFAULT_MAX_STEPS, DEFAULT_TOP_K, DeepSearchQAEnv
from autorl_task_deepsearchqa.judge import RULE_JUDGE, LLMJudge, rule_judge
from autorl_task_deepsearchqa.prompt import HISTORY_WINDOW, build_messages, extract_action
from autorl_task_deepsearchqa.recording import SEARCHES_FILE, SearchRecorder, SearchReplay

SUCCESS_THRESHOLD = 1.0
"""Reward 1.0 = the judge accepted the answer."""

STOP = ("\n",)
"""One action per line: generation stops at the end of the first line."""

ENV_OPTIONS = {
    "max_steps": "steps per episode before it ends unanswered (6)",
    "top_k": "results per search (3)",
    "search_backend": "registered search backend (bm25)",
    "search_options": "keyword arguments for the search backend's factory",
    "corpus_path": "the bm25 corpus (set by the task)",
    "judge": "'rule' or an LLM judge '<backend>/<model>'",
    "judge_options": "driver options for the LLM judge (timeout_s, max_attempts, base_url...)",
    "replay": "records directory to answer searches and judge calls from, offline",
    "records_dir": "where searches and judge calls are recorded (default: records/ by the eval "
    "file)",
}
"""The evaluator_config keys this module's make_env reads (the rollout evaluator checks them)."""

__all__ = [
    "DEFAULT_MAX_STEPS",
    "ENV_OPTIONS",
    "HISTORY_WINDOW",
    "STOP",
    "SUCCESS_THRESHOLD",
    "build_messages",
    "episode_metrics",
    "extract_action",
    "load_sessions",
    "make_env",
    "records_dir",
]

_lock = threading.Lock()
_judges: dict[tuple[str, str, str, str], Any] = {}
_searches: dict[tuple[str, str, str, str], Any] = {}


@lru_cache(maxsize=8)
def _questions(eval_path: str) -> tuple[Question, ...]:
    return tuple(load_questions(eval_path))


def load_sessions(eval_path: str | os.PathLike[str]) -> list[str]:
    return [q.session_id for q in _questions(str(Path(eval_path).resolve()))]


def records_dir(config: Mapping[str, Any], eval_path: str | os.PathLike[str]) -> Path:
    """Where searches, judge verdicts and judge calls are recorded for this eval split."""
    given = config.get("records_dir")
    return Path(given) if given else Path(eval_path).resolve().parent / "records"


def _search(config: Mapping[str, Any], records: Path) -> Any:
    backend = str(config.get("search_backend", "bm25"))
    replay = config.get("replay")
    key = (backend, str(config.get("corpus_path", "")), str(records), str(replay or ""))
    with _lock:
        if key in _searches:
            return _searches[key]
        if replay:
            search: Any = SearchReplay(Path(replay) / SEARCHES_FILE, backend)
        else:
            from autorl.registry import get_registry

            options = dict(config.get("search_options") or {})
            if backend == "bm25" and config.get("corpus_path"):
                options.setdefault("corpus_path", config["corpus_path"])
            live = get_registry().create("search_backend", backend, **options)
            search = SearchRecorder(live, records / SEARCHES_FILE)
        _searches[key] = search
        return search


def _grader(config: Mapping[str, Any], records: Path, style: str = "chat") -> Any:
    """The grade function: the rule judge, or the LLM judge of ``style`` (its prompt)."""
    judge = str(config.get("judge", RULE_JUDGE))
    if judge == RULE_JUDGE:
        return rule_judge
    replay = config.get("replay")
    key = (judge, str(records), str(replay or ""), style)
    with _lock:
        if key not in _judges:
            options = dict(config.get("judge_options") or {})
            _judges[key] = LLMJudge(judge, records, replay_dir=replay, options=options, style=style)
        return _judges[key].grade


def make_env(config: Mapping[str, Any], eval_path: str | os.PathLike[str]) -> DeepSearchQAEnv:
    """A fresh environment over the eval questions, sharing index, recorder and judge."""
    questions = _questions(str(Path(eval_path).resolve()))
    if not questions:
        raise ConfigError(f"deepsearchqa: eval split {eval_path} holds no question")
    records = records_dir(config, eval_path)
    search = _search(config, records)
    return DeepSearchQAEnv(
        questions,
        search.search,
        _grader(config, records),
        max_steps=int(config.get("max_steps", DEFAULT_MAX_STEPS)),
        top_k=int(config.get("top_k", DEFAULT_TOP_K)),
    )


def episode_metrics(info: Mapping[str, Any]) -> dict[str, float]:
    """Per-episode numbers the evaluator averages or sums: searches and the judge's cost."""
    judged = bool(info.get("judged", info.get("answered"))) and (
        info.get("judge", RULE_JUDGE) != RULE_JUDGE
    )
    return {
        "searches": float(info.get("searches", 0)),
        "answered": float(bool(info.get("answered"))),
        "rule_judge": float(info.get("judge", RULE_JUDGE) == RULE_JUDGE),
        "judge_calls": float(judged and not info.get("judge_cached", False)),
        "judge_cached": float(bool(info.get("judge_cached", False))),
        "judge_input_tokens": float(info.get("judge_input_tokens", 0)),
        "judge_output_tokens": float(info.get("judge_output_tokens", 0)),
        "judge_cost_usd": float(info.get("judge_cost_usd", 0.0)),
        "judge_parse_errors": float(bool(info.get("judge_parse_error", False))),
        "judge_fallbacks": float(bool(info.get("judge_fallback", False))),
    }
