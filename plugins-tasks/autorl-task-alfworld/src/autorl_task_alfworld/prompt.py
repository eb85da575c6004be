"""The ReAct prompt the evaluator uses, and how an action is read from a model's reply.

In the reference's style (ReAct on ALFWorld): an instruction, two worked examples, then the
task; each turn the model writes one line, either an action for the engine (``go to cabinet
1``, ``take apple 1 from countertop 2``, ``move apple 1 to fridge 1``, ``heat ...``, ``cool
...``, ``clean ...``, ``use desklamp 1``, ``open``/``close``/``examine``, ``look``,
``inventory``) or a thought (``think: ...``, answered ``OK.``). The two examples were written
for this project in rooms that no shipped train or eval game uses.

As a chat: the first user message holds the instruction, the examples and the first
observation; then each action is an assistant message and each observation a user message.
Only the last ``history_window`` turns (at least one) are sent in full: older turns are folded
into one line listing their actions, so a prompt stays small enough for CPU inference even at
50 steps.
Standard library and ``autorl_task_common`` only (both copied into the workspace kit).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from autorl_task_common.react import check_turns

HISTORY_WINDOW = 3
"""Turns (action + observation) sent in full; older ones are summarised by their actions."""
STOP = ("\n",)
"""One action per line: generation may stop at the first newline (the reference's stop)."""

INSTRUCTION = """Interact with a household to solve a task. Reply with one line: an action \
(go to X, open X, close X, take X from Y, move X to Y, heat/cool/clean X with Y, use X, \
examine X, look, inventory) or a thought "think: ...". Two examples:"""

EXAMPLE_CLEAN = """You are in the middle of a room. Looking quickly around you, you see a \
diningtable 1, a shelf 1, and a sinkbasin 1.
Your task is to: put a clean ladle in shelf.
> think: Find a ladle, clean it with sinkbasin 1, put it on shelf 1.
OK.
> go to diningtable 1
You arrive at diningtable 1. On the diningtable 1, you see a ladle 1.
> take ladle 1 from diningtable 1
You pick up the ladle 1 from the diningtable 1.
> go to sinkbasin 1
You arrive at sinkbasin 1. On the sinkbasin 1, you see nothing.
> clean ladle 1 with sinkbasin 1
You clean the ladle 1 using the sinkbasin 1.
> go to shelf 1
You arrive at shelf 1. On the shelf 1, you see nothing.
> move ladle 1 to shelf 1
You move the ladle 1 to the shelf 1."""

EXAMPLE_LAMP = """You are in the middle of a room. Looking quickly around you, you see a \
drawer 1, a sidetable 1, and a sofa 1.
Your task is to: examine the newspaper with the desklamp.
> go to sofa 1
You arrive at sofa 1. On the sofa 1, you see a newspaper 1.
> take newspaper 1 from sofa 1
You pick up the newspaper 1 from the sofa 1.
> go to sidetable 1
You arrive at sidetable 1. On the sidetable 1, you see a desklamp 1.
> use desklamp 1
You turn on the desklamp 1."""

FOLDED_ACTIONS = 8
"""At most this many of the omitted turns' actions are listed (the most recent ones)."""

ACTION_PREFIX_RE = re.compile(r"^\s*(?:>\s*|action\s*:\s*)", re.IGNORECASE)


def first_user_message(observation: str) -> str:
    return (
        f"{INSTRUCTION}\n\n{EXAMPLE_CLEAN}\n\n{EXAMPLE_LAMP}\n\nHere is the task.\n{observation}\n>"
    )


def build_messages(
    observations: Sequence[str], actions: Sequence[str], history_window: int = HISTORY_WINDOW
) -> list[dict[str, str]]:
    """Chat messages asking for the next action.

    ``observations`` has one more entry than ``actions``: the first observation (after reset),
    then the observation after each action.
    """
    check_turns(observations, actions)
    window = max(1, int(history_window))
    folded = max(0, len(actions) - window)
    task = observations[0]
    if folded:
        listed = list(actions[max(0, folded - FOLDED_ACTIONS) : folded])
        more = "...; " if folded > FOLDED_ACTIONS else ""
        task += f"\n(earlier turns omitted; your actions were: {more}{'; '.join(listed)})"
    messages = [{"role": "user", "content": first_user_message(task)}]
    for index in range(folded, len(actions)):
        messages.append({"role": "assistant", "content": actions[index]})
        messages.append({"role": "user", "content": f"{observations[index + 1]}\n>"})
    return messages


def extract_action(reply: str) -> str | None:
    """The first non-empty line of a reply, without a ``>`` or ``Action:`` prefix; None if the
    reply is empty. ``think: ...`` lines are kept as they are (they answer ``OK.``)."""
    for line in reply.splitlines():
        line = ACTION_PREFIX_RE.sub("", line).strip()
        if line:
            return " ".join(line.split())
    return None
