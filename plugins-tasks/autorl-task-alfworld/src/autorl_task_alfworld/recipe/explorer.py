"""An ALFWorld demonstrator that a small model can imitate: it acts only on what the prompt shows.

ALFWorld's hand-coded expert reads the game state, so it walks straight to wherever the object
lies; a policy that sees only the text cannot know that, and SmolLM2 trained on the expert's
episodes learnt an order of visits without learning when to stop and take (docs/tasks/alfworld.md).
This explorer decides every action from the goal line, the room's receptacle list (the first
observation, always in the prompt), the latest observation and its own recent actions, each of
which the grader's prompt holds (the folded history lists the last actions):

1. **search**: go to the room's receptacles in the order the room lists them; open a closed
   one; take the goal's object as soon as an observation shows it (never from a receptacle of
   the goal's target kind, where a pick-two game's first object already lies);
2. **transform**: clean / heat / cool it at sinkbasin 1 / microwave 1 / fridge 1;
   for a lamp goal, go to the desks, sidetables and dressers in listed order and use the
   desklamp where one is seen;
3. **place**: go to number 1 of the target kind, open it if closed, move the
   object there; a pick-two goal then searches on from after the first object's receptacle.

Standard library only: the recipe runs it in the workspace on the kit's train games.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

LAMP_HOLDERS = ("desk", "sidetable", "dresser")
"""Where ALFWorld puts desk lamps (the generated rooms follow it)."""
TOOLS = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}

_GOALS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], Goal]]] = []


@dataclass(frozen=True)
class Goal:
    """What the task line asks: the object, where it must end, and what happens in between."""

    obj: str
    target: str = ""
    transform: str = ""
    """``clean``, ``heat``, ``cool``, ``lamp`` or empty."""
    count: int = 1


def _goal(pattern: str) -> Callable[[Callable[[re.Match[str]], Goal]], None]:
    def register(build: Callable[[re.Match[str]], Goal]) -> None:
        _GOALS.append((re.compile(pattern), build))

    return register


@_goal(r"put a (clean|hot|cool) (\w+) in (\w+)")
def _(m: re.Match[str]) -> Goal:
    verb = {"clean": "clean", "hot": "heat", "cool": "cool"}[m[1]]
    return Goal(m[2], m[3], verb)


@_goal(r"(clean|heat|cool) some (\w+) and put it in (\w+)")
def _(m: re.Match[str]) -> Goal:
    return Goal(m[2], m[3], m[1])


@_goal(r"(?:put|find) two (\w+) (?:in|and put them in) (\w+)")
def _(m: re.Match[str]) -> Goal:
    return Goal(m[1], m[2], count=2)


@_goal(r"(?:look at (\w+) under|examine the (\w+) with) the desklamp")
def _(m: re.Match[str]) -> Goal:
    return Goal(m[1] or m[2], transform="lamp")


@_goal(r"put (?:a|an|some) (\w+) (?:in|on) (\w+)")
def _(m: re.Match[str]) -> Goal:
    return Goal(m[1], m[2])


def parse_goal(first_observation: str) -> Goal:
    """The goal of the ``Your task is to: ...`` line; ValueError when no template fits."""
    line = first_observation.rsplit("Your task is to:", 1)[-1].strip().rstrip(".")
    for pattern, build in _GOALS:
        if m := pattern.fullmatch(line):
            return build(m)
    raise ValueError(f"no ALFWorld goal template matches {line!r}")


def receptacles(first_observation: str) -> list[str]:
    """The room's receptacles in the order the first observation lists them."""
    m = re.search(r"you see (.*?)\.\s*(?:\n|$)", first_observation)
    return seen(f"you see {m[1]}.") if m else []


def seen(observation: str) -> list[str]:
    """Things an observation lists (``you see a mug 1, and a pan 2.`` -> ``mug 1``, ``pan 2``)."""
    found: list[str] = []
    for m in re.finditer(r"you see (.*?)\.", observation):
        for part in re.split(r",\s*(?:and\s+)?|\s+and\s+", m[1]):
            name = re.sub(r"^(?:a|an|some)\s+", "", part.strip())
            if re.fullmatch(r"[a-z]+ \d+", name):
                found.append(name)
    return found


def kind(name: str) -> str:
    return name.rsplit(" ", 1)[0]


def next_action(observations: Sequence[str], actions: Sequence[str]) -> str:
    """The explorer's next action given the episode so far (``observations`` has one more
    entry than ``actions``, as in ``build_messages``)."""
    first, last = observations[0], observations[-1]
    goal, room = parse_goal(first), receptacles(first)
    here = next((a[len("go to ") :] for a in reversed(actions) if a.startswith("go to ")), "")
    holding = _holding(actions)
    if here and f"The {here} is closed." in last:
        return f"open {here}"
    if holding is None:
        if goal.transform == "lamp" and "use desklamp" in " ".join(actions):
            return "look"  # the goal was reached already (the episode ends before this)
        for item in seen(last):
            if kind(item) == goal.obj and here and kind(here) != goal.target:
                return f"take {item} from {here}"
        return f"go to {_next_place(room, actions, here)}"
    done = any(a.startswith(f"{goal.transform} {holding} ") for a in actions)
    if goal.transform in TOOLS and not done:
        tool = _first_of(room, TOOLS[goal.transform])
        if here == tool:
            return f"{goal.transform} {holding} with {tool}"
        return f"go to {tool}"
    if goal.transform == "lamp":
        lamps = [
            s for s in seen(last) + seen(_before_take(observations, actions)) if "desklamp" in s
        ]
        if lamps:
            return f"use {lamps[0]}"
        holders = [r for r in room if kind(r) in LAMP_HOLDERS]
        return f"go to {_after(holders, here)}"
    target = _first_of(room, goal.target)
    if here == target:
        return f"move {holding} to {target}"
    return f"go to {target}"


def is_search(actions: Sequence[str], action: str) -> bool:
    """Whether ``action`` (after ``actions``) is a search step: going to or opening the next
    receptacle with empty hands. Most of an episode; the decisions between them are rarer."""
    return _holding(actions) is None and action.startswith(("go to ", "open "))


def _holding(actions: Sequence[str]) -> str | None:
    """The object taken and not yet moved anywhere, if any."""
    for action in reversed(actions):
        if action.startswith("move "):
            return None
        if m := re.fullmatch(r"take (.+?) from .+", action):
            return m[1]
    return None


def _before_take(observations: Sequence[str], actions: Sequence[str]) -> str:
    """The observation that showed the object just taken (a lamp may stand beside it)."""
    for index in range(len(actions) - 1, -1, -1):
        if actions[index].startswith("take "):
            return observations[index]
    return ""


def _first_of(room: Sequence[str], what: str) -> str:
    """Number 1 of a kind (as in the prompt's examples), else the first one listed."""
    return f"{what} 1" if f"{what} 1" in room else next((r for r in room if kind(r) == what), "")


def _after(places: Sequence[str], here: str) -> str:
    """The place listed after ``here`` (the first one when ``here`` is not listed), cyclic."""
    if here in places:
        return places[(places.index(here) + 1) % len(places)]
    return places[0] if places else here


def _next_place(room: Sequence[str], actions: Sequence[str], here: str) -> str:
    """Where the search goes next: the receptacle after the current one in the room's list
    (the first one at the start); right after a pick-two goal's first object was placed, the
    one after where it was taken. Receptacles of the target kind are visited too (one rule:
    the next in the list), though nothing is taken there."""
    if actions and actions[-1].startswith("move "):
        took = next(a for a in reversed(actions) if a.startswith("take "))
        here = took.rsplit(" from ", 1)[1]
    return _after(room, here)


def room_variant(
    observations: Sequence[str], actions: Sequence[str], rng: random.Random
) -> tuple[list[str], list[str]] | None:
    """The same episode in a smaller room: the explorer's episode with some receptacles that
    played no part in it (searched and found empty, never a target, tool, lamp holder or
    where something was taken) taken out of the room's list and out of the episode, which the
    engine would have played the same way. ``None`` when nothing could go.

    The shipped train games have 8 rooms: a small model that sees only those learns each
    room's order of visits by heart (measured: on unseen rooms it jumped from ``cabinet 1`` to
    the ``fridge 1`` of a train kitchen) instead of the rule, the next receptacle in the list.
    Variants show the rule over many more lists. Every variant is checked: the explorer,
    replayed on it, must choose exactly its actions.
    """
    first = observations[0]
    goal, room = parse_goal(first), receptacles(first)
    keep_kinds = {goal.target, TOOLS.get(goal.transform, "")}
    if goal.transform == "lamp":
        keep_kinds.update(LAMP_HOLDERS)
    keep_kinds.update(kind(a.rsplit(" from ", 1)[1]) for a in actions if a.startswith("take "))
    kinds = [k for k in dict.fromkeys(kind(r) for r in room) if k not in keep_kinds]
    dropped: set[str] = set()
    for k in kinds:
        if rng.random() < 0.5:
            continue
        members = [r for r in room if kind(r) == k]  # listed from the highest number down
        dropped.update(members[: rng.randint(1, len(members))])
    if not dropped:
        return None
    listed = [r for r in room if r not in dropped]
    items = ", ".join(f"a {r}" for r in listed[:-1]) + f", and a {listed[-1]}."
    if len(listed) == 1:
        items = f"a {listed[0]}."
    new_first = re.sub(r"you see .*?\.\s*(?=\n|$)", lambda _: f"you see {items}", first, count=1)
    new_obs, new_actions = [new_first], []
    for action, observation in zip(actions, observations[1:], strict=True):
        target = re.sub(r"^(?:go to|open) ", "", action)
        if action.startswith(("go to ", "open ")) and target in dropped:
            continue
        new_actions.append(action)
        new_obs.append(observation)
    for index, action in enumerate(new_actions):
        if next_action(new_obs[: index + 1], new_actions[:index]) != action:
            return None
    return new_obs, new_actions
