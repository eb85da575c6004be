"""The ReAct-style prompt the evaluator uses, and how an action is read from a model's reply.

The evaluator keeps, per session, the observations and the actions taken so far and sends them as
a chat: the first user message holds the rules, one worked example and the first observation;
then each action is an assistant message and each new observation a user message. Observations
older than the last ``history_window`` are shortened to one line so the prompt stays small.
The model answers with one action; :func:`extract_action` takes the first ``search[...]`` or
``click[...]`` in the reply (an ``Action:`` prefix or text around it is ignored).
Two other styles follow: ``compact`` (the offline default) and ``reference`` (the reference
implementation's zero-shot prompt and action reading, the default on the official data).
Standard library, ``autorl_task_common`` and the env module only (all copied into the kit).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from autorl_task_common.react import bracket_action, check_turns, react_messages

from .env import parse_action

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
    return react_messages(first_user_message, observations, actions, history_window, short=_short)


def extract_action(reply: str) -> str | None:
    """The first ``search[...]``/``click[...]`` of a model reply, normalised; None if absent."""
    return bracket_action(ACTION_IN_TEXT_RE, reply)


# -- the compact prompt ---------------------------------------------------------------------
#
# The ReAct prompt above costs ~1,000 tokens a step (rules, a worked example and four full
# pages of history): about 5,000 prompt tokens an episode, minutes per evaluation for a 135M
# model on two CPU cores. The compact style sends one user message a step: short rules, the
# instruction once, the actions taken so far and the current page with shortened result lines
# (~250 tokens). It is the default on the offline catalogue; the reference protocol (official
# data) keeps the ReAct prompt.

PROMPT_STYLES = ("react", "compact", "reference")
COMPACT_TITLE_WORDS = 6
COMPACT_RULES = (
    "Buy the product the instruction asks for. Reply with one action only: search[keywords] "
    "on the search page, or click[button] with a button shown in [brackets] (a product id, "
    "an option, next >, < prev, back to search, buy now). Pick the wanted options, then "
    "click[buy now]."
)
_RESULT_LINE_RE = re.compile(r"^\[([^\]]+)\] (.*) \| (\$[0-9.,]+)$")


def compact_page(observation: str) -> str:
    """The page without the instruction and boilerplate, result titles cut to a few words."""
    lines = []
    for line in observation.splitlines():
        if line.startswith("Instruction:") or line in ("WebShop", "[Search]"):
            continue
        if line.startswith("Page ") and "(Total results" in line:
            continue
        match = _RESULT_LINE_RE.match(line)
        if match:
            words = match.group(2).split(" - ")[0].split()
            title = " ".join(words[:COMPACT_TITLE_WORDS])
            line = f"[{match.group(1)}] {title} {match.group(3)}"
        lines.append(line)
    return "\n".join(lines) or "search page: [Search]"


def instruction_of(observation: str) -> str:
    """The ``Instruction:`` line's text of a page (every WebShop page starts with it)."""
    for line in observation.splitlines():
        if line.startswith("Instruction:"):
            return line.removeprefix("Instruction:").strip()
    return ""


def build_compact_messages(
    observations: Sequence[str], actions: Sequence[str], history_window: int = 0
) -> list[dict[str, str]]:
    """One user message: rules, instruction, the actions so far and the current page.

    ``history_window`` is accepted for the evaluator's signature; every earlier action is
    listed (an episode is short), no earlier page is.
    """
    check_turns(observations, actions)
    done = " ".join(actions) if actions else "none"
    content = (
        f"{COMPACT_RULES}\nInstruction: {instruction_of(observations[0])}\n"
        f"Actions so far: {done}\nPage:\n{compact_page(observations[-1])}\nAction:"
    )
    return [{"role": "user", "content": content}]


# -- the reference implementation's prompt ---------------------------------------------------
#
# RD-Agent's ``autorl_bench`` (the code behind the paper) scores WebShop zero-shot: a system
# message, then one user message holding the instruction, the actions the current page offers,
# rules, and the last five turns as ``Observation k: ...`` / ``Action k: ...`` lines; greedy,
# 100 new tokens, decoding stops at a newline. Its history pairs each action with the page that
# action led to, printed before the action; the page the first search was made on is dropped
# once a turn has been taken, and the current page is shown twice (as the last turn's and as
# the new one). That is reproduced as it is: parity means the same prompt, quirks included.

REFERENCE_HISTORY_WINDOW = 5
REFERENCE_SYSTEM = (
    "You are a helpful shopping assistant browsing an e-commerce website. "
    "Given a user instruction, current observation, and available actions, "
    "pick the best action to find and purchase a matching product. "
    "Output ONLY one action (e.g., 'search[red shoes]', 'click[buy now]') "
    "with NO extra text, NO explanation."
)
REFERENCE_HEAD = """You are shopping on an e-commerce website. Find and purchase a product \
matching the user's instruction.

Instruction: {instruction}

Available actions:
{actions}

Rules:
- Output ONLY one action from the available actions list above.
- For search, use: search[your query]
- For clicking, use: click[exact text from the list]
- Do NOT output anything other than the action.

Now it's your turn:
"""
_BUTTON_LINES = {
    "[Back To Search]": ("back to search",),
    "[< Prev]": ("< prev",),
    "[Next >]": ("next >",),
    "[Description] [Features] [Buy Now]": ("description", "features", "buy now"),
}
_OPTION_LINE_RE = re.compile(r"^[^\[\]:]+: ((?:\[[^\]]+\]\*? ?)+)$")
_OPTION_RE = re.compile(r"\[([^\]]+)\]")
_PRODUCT_LINE_RE = re.compile(r"^\[([^\]]+)\] .* \| \$[0-9.,]+$")


def current_page(observation: str) -> str:
    """The page itself: an ``Invalid action: ...`` or ``Out of steps`` note before it is cut."""
    if observation.startswith(("Invalid action:", "Out of steps")) and "\n\n" in observation:
        return observation.split("\n\n", 1)[1]
    return observation


def page_actions(observation: str) -> list[str]:
    """What the page offers, as the reference lists it: ``search[<your query>]`` when there is
    a search box, then ``click[<name>]`` for the buttons and product links in page order and
    the option values last, lower case (WebShop's ``get_available_actions``). Read from the
    page's text, which shows every button in brackets (a test checks this against the
    environment's ``available_actions``)."""
    actions: list[str] = []
    options: list[str] = []
    for line in current_page(observation).splitlines():
        if line == "[Search]":
            actions.append("search[<your query>]")
        elif line in _BUTTON_LINES:
            actions += [f"click[{name}]" for name in _BUTTON_LINES[line]]
        elif match := _PRODUCT_LINE_RE.match(line):
            actions.append(f"click[{match.group(1).lower()}]")
        elif match := _OPTION_LINE_RE.match(line):
            options += [f"click[{value}]" for value in _OPTION_RE.findall(match.group(1))]
    return actions + options


def build_reference_messages(
    observations: Sequence[str],
    actions: Sequence[str],
    history_window: int = REFERENCE_HISTORY_WINDOW,
) -> list[dict[str, str]]:
    """The reference's two messages: its system message and one user message (instruction,
    the current page's actions, rules, the last ``history_window`` turns, the current page)."""
    check_turns(observations, actions)
    current = observations[-1]
    listed = "\n".join(f"  {action}" for action in page_actions(current))
    prompt = REFERENCE_HEAD.format(instruction=instruction_of(observations[0]), actions=listed)
    turns = list(zip(actions, observations[1:], strict=True))
    recent = turns[-history_window:] if history_window > 0 else []
    offset = len(turns) - len(recent)
    for number, (action, observation) in enumerate(recent, offset + 1):
        prompt += f"\nObservation {number}: {observation}\nAction {number}: {action}\n"
    prompt += f"\nObservation {len(turns) + 1}: {current}\nAction {len(turns) + 1}:"
    return [
        {"role": "system", "content": REFERENCE_SYSTEM},
        {"role": "user", "content": prompt},
    ]


def extract_reference_action(reply: str) -> str | None:
    """The reference's reading of a reply: stripped, an ``Action:`` prefix dropped,
    ``choose[`` read as ``click[``; the whole of what is left is the action (None when it is
    not one, and the environment is sent the reply's first line and says why)."""
    action = reply.strip()
    if action.startswith("Action:"):
        action = action[len("Action:") :].strip()
    if action.startswith("choose["):
        action = "click[" + action[len("choose[") :]
    return action if parse_action(action) is not None else None


def messages_builder(style: str) -> Callable[..., list[dict[str, str]]]:
    """``build_messages`` for a prompt style (``react``, ``compact`` or ``reference``)."""
    if style == "compact":
        return build_compact_messages
    if style == "react":
        return build_messages
    if style == "reference":
        return build_reference_messages
    raise ValueError(f"unknown WebShop prompt style {style!r}; use one of {PROMPT_STYLES}")


def action_extractor(style: str) -> Callable[[str], str | None]:
    """``extract_action`` for a prompt style: the reference's own reading for ``reference``."""
    if style not in PROMPT_STYLES:
        raise ValueError(f"unknown WebShop prompt style {style!r}; use one of {PROMPT_STYLES}")
    return extract_reference_action if style == "reference" else extract_action
