"""The ``interactive`` contract the ``rollout`` evaluator consumes: what a task provides so that
the model plays episodes in an environment, one action per turn. A task's ``contract`` module
implements :class:`InteractiveContract`; it reads its eval rows itself (``load_sessions``).
:mod:`autorl_evaluator_rollout.protocol` checks the optional parts when a run loads it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from autorl.contracts import ContractKind

Messages = list[dict[str, str]]


class InteractiveContract(Protocol):
    """``interactive``: episodes in an environment. ``build_messages`` returns chat messages or
    raw text (a ``str``, sent without a chat template); one with an ``info`` parameter also gets
    the episode's reset info. Optional: ``episode_metrics(info)``, ``ENV_OPTIONS`` (the
    evaluator-config keys forwarded to ``make_env``), ``STOP`` (reply stop strings)."""

    def load_sessions(self, eval_path: Path) -> list[str]: ...
    def make_env(self, config: Mapping[str, Any], eval_path: Path) -> Any: ...
    def build_messages(
        self, observations: Sequence[str], actions: Sequence[str], history_window: int
    ) -> Messages | str: ...
    def extract_action(self, reply: str) -> str | None: ...


INTERACTIVE = ContractKind(
    "interactive",
    InteractiveContract,
    optional=("episode_metrics", "ENV_OPTIONS", "STOP"),
    summary="episodes in an environment, one action per turn",
)
