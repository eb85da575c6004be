"""The rollout evaluator's protocol with the compact prompt (the offline catalogue's default).

Everything as :mod:`autorl_task_webshop.protocol` except ``build_messages``: one short user
message a step (see :func:`autorl_task_webshop.prompt.build_compact_messages`).
"""

from __future__ import annotations

from autorl_task_webshop.prompt import build_compact_messages as build_messages
from autorl_task_webshop.protocol import (
    DEFAULT_MAX_STEPS,
    ENV_OPTIONS,
    SUCCESS_THRESHOLD,
    extract_action,
    load_sessions,
    load_shop,
    make_env,
    parse_action,
)

STOP = ("\n",)
"""An action is one line: decoding ends at the first newline (a rambling reply costs little)."""
HISTORY_WINDOW = 0
"""Unused by the compact prompt: it lists every earlier action and shows only the current page."""

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
