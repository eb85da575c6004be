"""The rollout evaluator's protocol with the reference implementation's prompt (the default on
the official data; docs/reference.md).

Everything as :mod:`autorl_task_webshop.protocol` except ``build_messages`` (the reference's
system message and zero-shot user message, see
:func:`autorl_task_webshop.prompt.build_reference_messages`), ``extract_action`` (the whole
stripped reply is the action, as the reference reads it) and ``STOP`` (a newline, as its
sampling parameters say).
"""

from __future__ import annotations

from autorl_task_webshop.prompt import REFERENCE_HISTORY_WINDOW as HISTORY_WINDOW
from autorl_task_webshop.prompt import build_reference_messages as build_messages
from autorl_task_webshop.prompt import extract_reference_action as extract_action
from autorl_task_webshop.protocol import (
    DEFAULT_MAX_STEPS,
    ENV_OPTIONS,
    SUCCESS_THRESHOLD,
    load_sessions,
    load_shop,
    make_env,
    parse_action,
)

STOP = ("\n",)
"""The reference decodes with ``stop=["\\n"]``: an action is one line."""

__all__ = [
    "DEFAULT_MAX_STEPS",
    "ENV_OPTIONS",
    "HISTORY_WINDOW",
    "STOP",
    "SUCCESS_THRESHOLD",
    "build_messages",
    "extract_action",
    "load_sessions",
    "load_shop",
    "make_env",
    "parse_action",
]
