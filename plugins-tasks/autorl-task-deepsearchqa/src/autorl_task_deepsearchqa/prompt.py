"""The ReAct prompt the evaluator sends, and how an action is read from a model's reply.

Per session the evaluator keeps the observations and the actions so far and sends them as a
chat: the first user message holds the rules, one worked example and the question; each action
is an assistant message and each new observation a user message. Observations older than the last
``history_window`` are shortened to their first line. The model answers with one action;
:func:`extract_action` takes the first ``search[...]`` or ``answer[...]`` of the reply.
Standard library and ``autorl_task_common`` only (both copied into the workspace kit).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from autorl_task_common.react import bracket_action, react_messages

HISTORY_WINDOW = 1
"""Only the latest results in full: each hop needs only the entry the last search found, and the
tiny model's 1,024-token context holds the rules, the example and one full observation."""
ACTION_CHARS = 100
"""Earlier actions are shown cut to this length (the longest expert action has 91 characters),
so an untrained model's rambling replies do not push the prompt past a small context."""
ACTION_IN_TEXT_RE = re.compile(r"(search|answer)\s*\[([^\]\n]*)\]", re.IGNORECASE)

RULES = """Answer the question by searching an encyclopedia. Each turn reply with exactly one \
action and nothing else:
- search[<keywords>] shows the top entries (title: text) for the keywords;
- answer[<answer>] gives your final answer and ends the episode. When the question asks for \
several items, list them all, separated by commas.
Search for the entities the question names, follow what you read, then answer."""

EXAMPLE = """Example:
Question: In which province was the painter Ada Brimsel born?
Action: search[Ada Brimsel]
Observation:
[1] Ada Brimsel: Ada Brimsel (born 1901) is a painter born in the city of Tovra.
Action: search[Tovra]
Observation:
[1] Tovra: Tovra is a city in the Republic of Calder. It lies in the province of Keldia.
Action: answer[Keldia]"""


def first_user_message(observation: str) -> str:
    return f"{RULES}\n\n{EXAMPLE}\n\nNow it is your turn.\n{observation}\nAction:"


def _short(observation: str) -> str:
    lines = observation.splitlines()
    return "Observation (shortened): " + (lines[0] if lines else "")


def build_messages(
    observations: Sequence[str], actions: Sequence[str], history_window: int = HISTORY_WINDOW
) -> list[dict[str, str]]:
    """Chat messages asking for the next action (one more observation than actions)."""
    return react_messages(
        first_user_message, observations, actions, history_window, short=_short, shown=_cut
    )


def _cut(action: str) -> str:
    return action if len(action) <= ACTION_CHARS else action[:ACTION_CHARS] + "..."


def extract_action(reply: str) -> str | None:
    """The first ``search[...]``/``answer[...]`` of a model reply, normalised; None if absent."""
    return bracket_action(ACTION_IN_TEXT_RE, reply)
