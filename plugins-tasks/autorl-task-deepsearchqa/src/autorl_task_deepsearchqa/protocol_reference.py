"""The rollout evaluator's protocol with the reference's own loop (task option
``prompt = "reference"``, the default with ``data_path``).

As RD-Agent's ``autorl_bench`` DeepSearchQA evaluator plays a question
(``benchmarks/deepsearchqa/eval.py``, commit 471eb30): a raw-text prompt, no chat template
(``build_messages`` returns a ``str``), generation stops at :data:`STOP`, 256 new tokens, greedy
(the task's evaluator config). The environment is :class:`env_reference.ReferenceEnv`: it keeps
the reference's ``full_prompt`` and ``model_trace``, reads the action from each reply itself
(``extract_action`` hands it the whole reply) and returns, as each observation, the text it
appended to the prompt, so the prompt is the observations joined. A judge
``"<backend>/<model>"`` asks with the reference's judge prompt (:mod:`judge`, style
``reference``); ``rule`` stays our offline judge.

Everything else (sessions, search backends, recording and replay, ``ENV_OPTIONS``, metrics) is
:mod:`autorl_task_deepsearchqa.protocol`'s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autorl_task_common.interactive import inherit_protocol
from autorl_task_common.react import check_turns

from autorl.errors import ConfigError
from autorl_task_deepsearchqa import protocol
from autorl_task_deepsearchqa.env import DEFAULT_TOP_K
from autorl_task_deepsearchqa.env_reference import ReferenceEnv
from autorl_task_deepsearchqa.prompt_reference import MAX_STEPS, build_reference_prompt
from autorl_task_deepsearchqa.prompt_reference import STOP as REFERENCE_STOP
from autorl_task_deepsearchqa.protocol import _grader, _questions, _search, records_dir

inherit_protocol(protocol, globals())

STOP = REFERENCE_STOP
DEFAULT_MAX_STEPS = MAX_STEPS
HISTORY_WINDOW = MAX_STEPS
"""Unused: the reference's prompt holds the whole history."""


def make_env(config: Mapping[str, Any], eval_path: str | os.PathLike[str]) -> ReferenceEnv:
    """The reference's loop over the eval questions, sharing index, recorder and judge."""
    questions = _questions(str(Path(eval_path).resolve()))
    if not questions:
        raise ConfigError(f"deepsearchqa: eval split {eval_path} holds no question")
    records = records_dir(config, eval_path)
    return ReferenceEnv(
        questions,
        _search(config, records).search,
        _grader(config, records, style="reference"),
        max_steps=int(config.get("max_steps", MAX_STEPS)),
        top_k=int(config.get("top_k", DEFAULT_TOP_K)),
    )


def build_messages(
    observations: Sequence[str], actions: Sequence[str], history_window: int = HISTORY_WINDOW
) -> str:
    """The raw text the reference sends next: its ``full_prompt`` (the observations joined);
    ``actions`` and ``history_window`` are not needed (the replies are in the observations)."""
    check_turns(observations, actions)
    return build_reference_prompt(observations)


def extract_action(reply: str) -> str:
    """The whole reply: the environment reads the action from it as the reference does."""
    return reply
