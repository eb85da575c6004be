"""The ReAct-style prompt the evaluator uses, and how an action is read from a model's reply.

The evaluator keeps, per session, the observations and the actions taken so far and sends them as
a chat: the first user message holds the rules, one worked example and the first observation;
then each action is an assistant message and each new observation a user message. Observations
older than the last ``history_window`` are shortened to one line so the prompt stays small.
The model answers with one action; :func:`extract_action` takes the first ``search[...]`` or
``click[...]`` in the reply (an ``Action:`` prefix or text around it is ignored).
Standard library only (copied into the workspace kit).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

HISTORY_WINDOW = 4
ACTION_IN_TEXT_RE = re.compile(r"(search|click)\s*\[([^\]\n]*)\]", re.IGNORECASE)

RULES = """You are shopping on a website to follow an instruction. Each turn you see the page and \
reply with exactly one action and nothing else:
- search[<keywords>] on the search page;
- click[<button>] to press a button shown in [brackets]: a product id, an option such as a size \
or color, next >, < prev, back to search, description, features, or buy now.
Choose the product that matches the instruction, click the wanted options, then click[buy now]."""

EXAMPLE = """Example:
Observation:
WebShop
Instruction: i need a lavender scented hand soap that is paraben free, and price lower than \
20.00 dollars
[Search]
Action: search[paraben free lavender hand soap]
Observation:
Instruction: i need a lavender scented hand soap that is paraben free, and price lower than \
20.00 dollars
[Back To Search]
Page 1 (Total results: 50)
[Next >]
[b0example1] Meadow Paraben Free Hand Soap - Gentle, Classic Edition | $12.99
[b0example2] Brightly Foaming Hand Soap - Citrus, Pro Edition | $24.50
Action: click[b0example1]
Observation:
Instruction: i need a lavender scented hand soap that is paraben free, and price lower than \
20.00 dollars
[Back To Search]
[< Prev]
scent: [lavender] [citrus]
Meadow Paraben Free Hand Soap - Gentle, Classic Edition
Price: $12.99
Attributes: paraben free, gentle
[Description] [Features] [Buy Now]
Action: click[lavender]
Observation: (the same page with [lavender]* selected)
Action: click[buy now]"""


def first_user_message(observation: str) -> str:
    return f"{RULES}\n\n{EXAMPLE}\n\nNow it is your turn.\nObservation:\n{observation}\nAction:"


def _short(observation: str) -> str:
    lines = [line for line in observation.splitlines() if not line.startswith("Instruction:")]
    return "Observation (shortened): " + (lines[0] if lines else "")


def build_messages(
    observations: Sequence[str], actions: Sequence[str], history_window: int = HISTORY_WINDOW
) -> list[dict[str, str]]:
    """Chat messages asking for the next action.

    ``observations`` has one more entry than ``actions``: the first observation (after reset),
    then the observation after each action.
    """
    if len(observations) != len(actions) + 1:
        raise ValueError(
            f"build_messages needs one more observation than actions, got {len(observations)} "
            f"observations and {len(actions)} actions"
        )
    keep_from = max(1, len(observations) - history_window)
    messages = [{"role": "user", "content": first_user_message(observations[0])}]
    for index, action in enumerate(actions, 1):
        messages.append({"role": "assistant", "content": action})
        observation = observations[index]
        text = observation if index >= keep_from else _short(observation)
        messages.append({"role": "user", "content": f"Observation:\n{text}\nAction:"})
    return messages


def extract_action(reply: str) -> str | None:
    """The first ``search[...]``/``click[...]`` of a model reply, normalised; None if absent."""
    match = ACTION_IN_TEXT_RE.search(reply)
    if match is None:
        return None
    return f"{match.group(1).lower()}[{' '.join(match.group(2).split())}]"
