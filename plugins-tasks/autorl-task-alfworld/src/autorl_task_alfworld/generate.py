"""Generate ALFWorld games from the engine's own PDDL domain, grammar and object tables.

The ``alfworld`` package ships the PDDL domain (``alfred.pddl``), the text grammar
(``alfred.twl2``), the goal library (PDDL goal and goal-text templates of every task type) and
the object/receptacle affordance tables of ALFRED (``alfworld.gen.constants``), but not the
official game files. This module writes PDDL *problems* for hand-designed rooms so the real
engine (TextWorld's PDDL backend with the ALFWorld wrappers) can play them.

A game is one :class:`~autorl_task_alfworld.games.GameRecord`: the problem, its goal text and
the ``pddl_params`` the hand-coded expert reads. Train and eval rooms are disjoint, and so are
their goals (task type, object, receptacle), in the spirit of ALFWorld's *unseen* split: the
same vocabulary in rooms and combinations never seen in training.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from autorl_task_alfworld.games import GameRecord

TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
"""The six ALFWorld task types (ALFWorld's ``TASK_TYPES`` 1-6)."""

OPENABLE = {"Fridge", "Cabinet", "Microwave", "Drawer", "Safe", "Box"}
RECEPTACLE_OBJECTS = {"Bowl", "Cup", "Mug", "Plate", "Pan", "Pot"}
LAMP_HOLDERS = ("Desk", "SideTable", "Dresser")


@dataclass(frozen=True)
class Layout:
    """A room: its kind and how many receptacles of each type it has."""

    name: str
    kind: str
    receptacles: tuple[tuple[str, int], ...]


LAYOUTS = (
    # kitchens
    Layout(
        "kitchen-a",
        "kitchen",
        (
            ("Cabinet", 3),
            ("CounterTop", 2),
            ("Drawer", 2),
            ("Fridge", 1),
            ("Microwave", 1),
            ("SinkBasin", 1),
            ("StoveBurner", 2),
            ("GarbageCan", 1),
        ),
    ),
    Layout(
        "kitchen-b",
        "kitchen",
        (
            ("Cabinet", 4),
            ("CounterTop", 1),
            ("DiningTable", 1),
            ("Drawer", 3),
            ("Fridge", 1),
            ("Microwave", 1),
            ("SinkBasin", 1),
            ("CoffeeMachine", 1),
        ),
    ),
    Layout(
        "kitchen-c",
        "kitchen",
        (
            ("Cabinet", 2),
            ("CounterTop", 3),
            ("Drawer", 1),
            ("Fridge", 1),
            ("Microwave", 1),
            ("SinkBasin", 1),
            ("Shelf", 2),
            ("Toaster", 1),
        ),
    ),
    Layout(
        "kitchen-d",
        "kitchen",
        (
            ("Cabinet", 5),
            ("CounterTop", 2),
            ("DiningTable", 1),
            ("Drawer", 2),
            ("Fridge", 1),
            ("Microwave", 1),
            ("SinkBasin", 1),
            ("GarbageCan", 1),
        ),
    ),
    Layout(
        "kitchen-e",
        "kitchen",
        (
            ("Cabinet", 3),
            ("CounterTop", 2),
            ("DiningTable", 1),
            ("Drawer", 3),
            ("Fridge", 1),
            ("Microwave", 1),
            ("SinkBasin", 1),
            ("StoveBurner", 2),
            ("Shelf", 1),
        ),
    ),
    # bedrooms and living rooms (the lamp tasks)
    Layout(
        "bedroom-a",
        "bedroom",
        (
            ("Bed", 1),
            ("Desk", 1),
            ("Drawer", 3),
            ("Dresser", 1),
            ("GarbageCan", 1),
            ("Shelf", 2),
            ("SideTable", 1),
        ),
    ),
    Layout(
        "bedroom-b",
        "bedroom",
        (("Bed", 1), ("Drawer", 2), ("Safe", 1), ("Shelf", 3), ("SideTable", 2), ("GarbageCan", 1)),
    ),
    Layout(
        "livingroom-a",
        "livingroom",
        (
            ("ArmChair", 1),
            ("Cabinet", 2),
            ("CoffeeTable", 1),
            ("Drawer", 2),
            ("SideTable", 2),
            ("Sofa", 1),
            ("GarbageCan", 1),
        ),
    ),
    Layout(
        "bedroom-c",
        "bedroom",
        (("Bed", 1), ("Desk", 1), ("Drawer", 4), ("Shelf", 1), ("SideTable", 1), ("Safe", 1)),
    ),
    Layout(
        "livingroom-b",
        "livingroom",
        (
            ("ArmChair", 1),
            ("CoffeeTable", 1),
            ("Drawer", 3),
            ("Dresser", 1),
            ("Shelf", 2),
            ("Sofa", 1),
        ),
    ),
    # bathrooms
    Layout(
        "bathroom-a",
        "bathroom",
        (
            ("BathtubBasin", 1),
            ("Cabinet", 3),
            ("CounterTop", 1),
            ("Drawer", 2),
            ("GarbageCan", 1),
            ("SinkBasin", 1),
            ("Toilet", 1),
        ),
    ),
    Layout(
        "bathroom-b",
        "bathroom",
        (
            ("Cabinet", 4),
            ("CounterTop", 1),
            ("Drawer", 3),
            ("SinkBasin", 2),
            ("Toilet", 1),
            ("Shelf", 1),
        ),
    ),
    Layout(
        "bathroom-c",
        "bathroom",
        (
            ("BathtubBasin", 1),
            ("Cabinet", 2),
            ("CounterTop", 1),
            ("Drawer", 1),
            ("GarbageCan", 1),
            ("SinkBasin", 1),
            ("Toilet", 1),
            ("Shelf", 2),
        ),
    ),
)
TRAIN_LAYOUTS = (
    "kitchen-a",
    "kitchen-b",
    "kitchen-c",
    "bedroom-a",
    "bedroom-b",
    "livingroom-a",
    "bathroom-a",
    "bathroom-b",
)
EVAL_LAYOUTS = ("kitchen-d", "kitchen-e", "bedroom-c", "livingroom-b", "bathroom-c")
"""Disjoint rooms: eval games are played in rooms no train game uses."""

OBJECTS_BY_KIND = {
    "kitchen": (
        "Apple",
        "Bowl",
        "Bread",
        "ButterKnife",
        "Cup",
        "DishSponge",
        "Egg",
        "Fork",
        "Kettle",
        "Knife",
        "Ladle",
        "Lettuce",
        "Mug",
        "Pan",
        "PepperShaker",
        "Plate",
        "Pot",
        "Potato",
        "SaltShaker",
        "Spatula",
        "Spoon",
        "Tomato",
        "WineBottle",
    ),
    "bedroom": (
        "AlarmClock",
        "Book",
        "Bowl",
        "CD",
        "CellPhone",
        "CreditCard",
        "KeyChain",
        "Laptop",
        "Mug",
        "Pen",
        "Pencil",
        "Pillow",
        "Statue",
        "Vase",
        "Watch",
    ),
    "livingroom": (
        "Book",
        "Box",
        "CD",
        "CellPhone",
        "CreditCard",
        "KeyChain",
        "Laptop",
        "Newspaper",
        "Pillow",
        "RemoteControl",
        "Statue",
        "Vase",
        "Watch",
    ),
    "bathroom": (
        "Candle",
        "Cloth",
        "DishSponge",
        "HandTowel",
        "SoapBar",
        "SoapBottle",
        "SprayBottle",
        "TissueBox",
        "ToiletPaper",
    ),
}
TASKS_BY_KIND = {
    "kitchen": (
        "pick_and_place_simple",
        "pick_clean_then_place_in_recep",
        "pick_heat_then_place_in_recep",
        "pick_cool_then_place_in_recep",
        "pick_two_obj_and_place",
    ),
    "bedroom": ("look_at_obj_in_light", "pick_and_place_simple", "pick_two_obj_and_place"),
    "livingroom": ("look_at_obj_in_light", "pick_and_place_simple", "pick_two_obj_and_place"),
    "bathroom": (
        "pick_and_place_simple",
        "pick_clean_then_place_in_recep",
        "pick_two_obj_and_place",
    ),
}
STATE_CHANGE = {
    "pick_clean_then_place_in_recep": ("Cleanable", "SinkBasin"),
    "pick_heat_then_place_in_recep": ("Heatable", "Microwave"),
    "pick_cool_then_place_in_recep": ("Coolable", "Fridge"),
}
"""Task type -> (affordance the object needs, receptacle that changes its state)."""

N_DISTRACTORS = (4, 7)
RESERVED_GOALS = {
    ("pick_clean_then_place_in_recep", "Ladle", "Shelf", ""),
    ("look_at_obj_in_light", "Newspaper", "", "DeskLamp"),
}
"""The goals of the prompt's two worked examples: no shipped game uses them."""


def _constants():
    import alfworld.gen.constants as constants

    return constants


def _goal_library() -> dict:
    import alfworld.gen.goal_library as glib

    return glib.gdict


def can_hold(receptacle: str, obj: str) -> bool:
    return obj in _constants().VAL_RECEPTACLE_OBJECTS.get(receptacle, set())


def has_affordance(obj: str, affordance: str) -> bool:
    return obj in _constants().VAL_ACTION_OBJECTS[affordance]


def receptacle_ids(layout: Layout) -> list[tuple[str, str]]:
    """``[(pddl id, type)]``. Ids follow ALFRED's ``Name|...`` mangling (``_bar_``) so the
    ALFWorld demangler names them ``cabinet 1``; basins keep ``basin`` in the id as in ALFRED."""
    out = []
    for rtype, count in layout.receptacles:
        for i in range(1, count + 1):
            if rtype.endswith("Basin"):
                stem = rtype[: -len("Basin")].lower()
                out.append((f"{stem}_bar_{i:02d}_bar_{rtype.lower()}", rtype))
            else:
                out.append((f"{rtype.lower()}_bar_{i:02d}", rtype))
    return out


def goal_candidates(layout: Layout) -> Iterator[tuple[str, str, str, str]]:
    """Every feasible ``(task_type, object, parent, toggle)`` goal of a room."""
    rtypes = {rtype for rtype, _ in layout.receptacles}
    objects = OBJECTS_BY_KIND[layout.kind]
    lamp_ok = any(holder in rtypes for holder in LAMP_HOLDERS)
    for task in TASKS_BY_KIND[layout.kind]:
        if task == "look_at_obj_in_light":
            if lamp_ok:
                for obj in objects:
                    if any(can_hold(r, obj) for r in rtypes):
                        yield task, obj, "", "DeskLamp"
            continue
        need = STATE_CHANGE.get(task)
        if need and need[1] not in rtypes:
            continue
        for obj in objects:
            if need and not has_affordance(obj, need[0]):
                continue
            holders = [r for r in sorted(rtypes) if can_hold(r, obj)]
            for parent in holders:
                if need and parent == need[1]:
                    continue
                # targets start elsewhere than their goal, two of them in two receptacles
                sources = sum(n for r, n in layout.receptacles if r != parent and can_hold(r, obj))
                if sources >= 2:
                    yield task, obj, parent, ""


def goal_text(task: str, obj: str, parent: str, toggle: str, rng: random.Random) -> str:
    """One of the goal library's templates, filled as ALFWorld does (lower-cased names)."""
    template = rng.choice(_goal_library()[task]["templates"])
    return template.format(obj=obj.lower(), recep=parent.lower(), toggle=toggle.lower(), mrecep="")


def goal_pddl(task: str, obj: str, parent: str, toggle: str) -> str:
    pddl = _goal_library()[task]["pddl"].format(obj=obj, recep=parent, toggle=toggle, mrecep="")
    return pddl.replace("#", "-")


def build_problem(
    layout: Layout, task: str, obj: str, parent: str, toggle: str, rng: random.Random
) -> str:
    """The PDDL problem: receptacles each at a location, target(s) and distractors placed in
    receptacles that can hold them (never already solved), the agent in the middle."""
    receps = receptacle_ids(layout)
    rtypes = sorted({rtype for _, rtype in receps})
    n_targets = 2 if task == "pick_two_obj_and_place" else 1
    sources = [(rid, rt) for rid, rt in receps if can_hold(rt, obj) and rt != parent]
    placed: list[tuple[str, str, str]] = []  # (object id, type, receptacle id)
    # two targets start in two different receptacles (the hand-coded expert expects it)
    for i, (rid, _) in enumerate(rng.sample(sources, n_targets)):
        placed.append((f"{obj.lower()}_bar_{i + 1:02d}", obj, rid))
    others = [o for o in OBJECTS_BY_KIND[layout.kind] if o != obj]
    for otype in rng.sample(others, rng.randint(*N_DISTRACTORS)):
        holders = [(rid, rt) for rid, rt in receps if can_hold(rt, otype)]
        if holders:
            placed.append((f"{otype.lower()}_bar_01", otype, rng.choice(holders)[0]))
    if toggle:
        holders = [(rid, rt) for rid, rt in receps if rt in LAMP_HOLDERS]
        placed.append((f"{toggle.lower()}_bar_01", toggle, rng.choice(holders)[0]))
    otypes = sorted({otype for _, otype, _ in placed})
    location = {rid: f"loc_bar_{i + 1:02d}" for i, (rid, _) in enumerate(receps)}

    objects = ["agent1 - agent", "loc_bar_00 - location"]
    objects += [f"{loc} - location" for loc in location.values()]
    objects += [f"{rid} - receptacle" for rid, _ in receps]
    objects += [f"{oid} - object" for oid, _, _ in placed]
    objects += [f"{t}Type - rtype" for t in rtypes] + [f"{t}Type - otype" for t in otypes]

    init = ["(atLocation agent1 loc_bar_00)"]
    for rid, rtype in receps:
        init.append(f"(receptacleType {rid} {rtype}Type)")
        init.append(f"(receptacleAtLocation {rid} {location[rid]})")
        if rtype in OPENABLE:
            init.append(f"(openable {rid})")
    for oid, otype, rid in placed:
        init.append(f"(objectType {oid} {otype}Type)")
        init.append(f"(inReceptacle {oid} {rid})")
        init.append(f"(objectAtLocation {oid} {location[rid]})")
        if otype == toggle:
            init.append(f"(toggleable {oid})")
            continue
        init.append(f"(pickupable {oid})")
        for affordance, fact in (
            ("Cleanable", "cleanable"),
            ("Heatable", "heatable"),
            ("Coolable", "coolable"),
        ):
            if has_affordance(otype, affordance):
                init.append(f"({fact} {oid})")
        if otype in RECEPTACLE_OBJECTS:
            init.append(f"(isReceptacleObject {oid})")
    for rtype in rtypes:
        for otype in otypes:
            if can_hold(rtype, otype):
                init.append(f"(canContain {rtype}Type {otype}Type)")

    lines = [
        f"(define (problem {layout.name.replace('-', '_')})",
        "(:domain alfred)",
        "(:objects",
        *objects,
        ")",
        "(:init",
        *init,
        ")",
        goal_pddl(task, obj, parent, toggle),
    ]
    return "\n".join(lines) + "\n"


def _pddl_params(obj: str, parent: str, toggle: str) -> dict[str, object]:
    return {
        "object_target": obj,
        "parent_target": parent,
        "toggle_target": toggle,
        "mrecep_target": "",
        "object_sliced": False,
    }


def build_split(
    split: str,
    layouts: tuple[str, ...],
    n_games: int,
    seed: int,
    exclude: set[tuple[str, str, str, str]] | None = None,
) -> list[GameRecord]:
    """``n_games`` games over ``layouts``, balanced over task types, each goal used once."""
    rng = random.Random(seed)
    by_name = {layout.name: layout for layout in LAYOUTS}
    pools: dict[str, list[tuple[Layout, tuple[str, str, str, str]]]] = {t: [] for t in TASK_TYPES}
    for name in layouts:
        layout = by_name[name]
        for goal in goal_candidates(layout):
            if goal not in RESERVED_GOALS and (exclude is None or goal not in exclude):
                pools[goal[0]].append((layout, goal))
    for pool in pools.values():
        rng.shuffle(pool)
    records: list[GameRecord] = []
    used: set[tuple[str, str, str, str]] = set()
    while len(records) < n_games:
        progressed = False
        for task in TASK_TYPES:
            pool = pools[task]
            while pool and pool[-1][1] in used:
                pool.pop()
            if not pool or len(records) >= n_games:
                continue
            layout, goal = pool.pop()
            used.add(goal)
            _, obj, parent, toggle = goal
            records.append(
                GameRecord(
                    id=f"{split}-{len(records):03d}",
                    task_type=task,
                    goal=goal_text(task, obj, parent, toggle, rng),
                    layout=layout.name,
                    pddl_params=_pddl_params(obj, parent, toggle),
                    pddl_problem=build_problem(layout, task, obj, parent, toggle, rng),
                )
            )
            progressed = True
        if not progressed:
            raise ValueError(f"only {len(records)} distinct goals fit the {split} rooms")
    return records


def goal_key(record: GameRecord) -> tuple[str, str, str, str]:
    p = record.pddl_params
    return (
        record.task_type,
        str(p["object_target"]),
        str(p["parent_target"]),
        str(p["toggle_target"]),
    )


def build_game_set(n_train: int = 120, n_eval: int = 40, seed: int = 0) -> dict[str, list]:
    """The shipped set: eval first (its goals are then excluded from train)."""
    evals = build_split("eval", EVAL_LAYOUTS, n_eval, seed + 1)
    train = build_split("train", TRAIN_LAYOUTS, n_train, seed, exclude={goal_key(r) for r in evals})
    return {"train": train, "eval": evals}
