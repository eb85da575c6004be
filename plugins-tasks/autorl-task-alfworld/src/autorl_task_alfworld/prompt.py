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

The reference's own prompt (task option ``prompt = "reference"``, :func:`build_reference_prompt`)
is raw text for a completion model, no chat template: the ReAct paper's ALFWorld prompt, with
the two examples of the game's task type read from the ReAct repository's
``prompts/alfworld_3prompts.json`` (the user's download; never shipped here), then the task and
the whole history, each action after ``>``. It is what RD-Agent's ``autorl_bench`` ALFWorld
evaluator (``benchmarks/alfworld/eval.py``) sends to vLLM.
Standard library and ``autorl_task_common`` only (both copied into the workspace kit).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence

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


# -- the reference's raw-text ReAct prompt ---------------------------------------------------

REACT_PROMPTS_FILE = "alfworld_3prompts.json"
"""The examples file: ``prompts/alfworld_3prompts.json`` of the ReAct repository (RD-Agent ships
the same bytes as ``benchmarks/alfworld/react_prompts.json``)."""
REFERENCE_INSTRUCTION = "Interact with a household to solve a task. Here are two examples.\n"
REFERENCE_TASK_HEADER = "\nHere is the task.\n"
REFERENCE_MAX_NEW_TOKENS = 100
"""The reference's ``max_tokens`` per reply (greedy, stop at the first newline: :data:`STOP`)."""
REFERENCE_KEYS: tuple[tuple[str, str], ...] = (
    ("pick_and_place", "put"),
    ("pick_clean_then_place", "clean"),
    ("pick_heat_then_place", "heat"),
    ("pick_cool_then_place", "cool"),
    ("look_at_obj", "examine"),
    ("pick_two_obj", "puttwo"),
)
"""Task-type prefix -> examples key, tried in this order (the reference's ``TASK_PREFIXES``)."""


def reference_key(task_type: str) -> str:
    """The examples key of a task type (``pick_heat_then_place_in_recep`` -> ``heat``)."""
    for prefix, key in REFERENCE_KEYS:
        if task_type.startswith(prefix):
            return key
    raise ValueError(
        f"task type {task_type!r} has no ReAct examples (known prefixes: "
        f"{', '.join(p for p, _ in REFERENCE_KEYS)})"
    )


def example_keys(key: str) -> tuple[str, str]:
    """The two examples of ``key`` in prompt order: ``react_<key>_1`` then ``react_<key>_0``."""
    return f"react_{key}_1", f"react_{key}_0"


def required_examples() -> list[str]:
    """Every examples-file key the reference prompt can need."""
    return [name for _, key in REFERENCE_KEYS for name in example_keys(key)]


def load_react_prompts(path: str | os.PathLike[str]) -> dict[str, str]:
    """The examples file as a dict; ValueError naming what is wrong if it is not a JSON object of
    strings holding every key of :func:`required_examples` (OSError if it cannot be read)."""
    with open(path, encoding="utf-8") as fh:
        try:
            examples = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not JSON ({exc})") from None
    if not isinstance(examples, dict):
        raise ValueError(f"{path} must hold a JSON object, got {type(examples).__name__}")
    missing = [k for k in required_examples() if not isinstance(examples.get(k), str)]
    if missing:
        raise ValueError(f"{path} lacks the example(s) {', '.join(missing)}")
    return examples


def reference_prefix(examples: Mapping[str, str], task_type: str) -> str:
    """Everything before the first observation: the instruction, the two examples of the task
    type (``_1`` then ``_0``, as they are) and :data:`REFERENCE_TASK_HEADER`."""
    first, second = example_keys(reference_key(task_type))
    return REFERENCE_INSTRUCTION + examples[first] + examples[second] + REFERENCE_TASK_HEADER


def build_reference_prompt(prefix: str, observations: Sequence[str], actions: Sequence[str]) -> str:
    """The reference's prompt before the next action: ``prefix + first observation + "\\n>"``,
    then per turn ``" {action}\\n{observation}\\n>"``; the whole history, never folded."""
    check_turns(observations, actions)
    history = "".join(
        f" {action}\n{observation}\n>"
        for action, observation in zip(actions, observations[1:], strict=True)
    )
    return prefix + observations[0] + "\n>" + history


def reference_action(reply: str) -> str | None:
    """The action is the reply stripped, as it is (None when that is empty: the evaluator then
    sends the empty action, as the reference does, and counts it unparsed)."""
    return reply.strip() or None
