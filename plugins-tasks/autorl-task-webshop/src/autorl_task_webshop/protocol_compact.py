"""The rollout evaluator's protocol with the compact prompt (the offline catalogue's default).

Everything as :mod:`autorl_task_webshop.protocol` except ``build_messages``: one short user
message a step (see :func:`autorl_task_webshop.prompt.build_compact_messages`).
"""

from __future__ import annotations

from autorl_task_common.interactive import inherit_protocol

from autorl_task_webshop import protocol
from autorl_task_webshop.prompt import build_compact_messages

inherit_protocol(protocol, globals(), "STOP")

build_messages = build_compact_messages
STOP = ("\n",)
"""An action is one line: decoding ends at the first newline (a rambling reply costs little)."""
HISTORY_WINDOW = 0
"""Unused by the compact prompt: it lists every earlier action and shows only the current page."""
