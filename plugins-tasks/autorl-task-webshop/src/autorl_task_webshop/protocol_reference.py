"""The rollout evaluator's protocol with the reference implementation's prompt (the default on
the official data; docs/reference.md).

Everything as :mod:`autorl_task_webshop.protocol` except ``build_messages`` (the reference's
system message and zero-shot user message, see
:func:`autorl_task_webshop.prompt.build_reference_messages`), ``extract_action`` (the whole
stripped reply is the action, as the reference reads it) and ``STOP`` (a newline, as its
sampling parameters say).
"""

from __future__ import annotations

from autorl_task_common.interactive import inherit_protocol

from autorl_task_webshop import protocol
from autorl_task_webshop.prompt import (
    REFERENCE_HISTORY_WINDOW,
    build_reference_messages,
    extract_reference_action,
)

inherit_protocol(protocol, globals(), "STOP")

HISTORY_WINDOW = REFERENCE_HISTORY_WINDOW
build_messages = build_reference_messages
extract_action = extract_reference_action
STOP = ("\n",)
"""The reference decodes with ``stop=["\\n"]``: an action is one line."""
