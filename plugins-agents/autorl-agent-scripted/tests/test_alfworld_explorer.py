"""The ALFWorld recipe's explorer: a demonstrator acting only on what the grader's prompt shows."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import autorl_task_alfworld  # noqa: F401
import pytest
from autorl_agent_scripted.agent import recipe_dir


@pytest.fixture
def explorer(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(recipe_dir("alfworld")))  # in autorl_task_alfworld/recipe
    monkeypatch.delitem(sys.modules, "explorer", raising=False)
    import explorer

    return explorer


def shipped_goals() -> list[dict[str, str]]:
    from importlib.resources import files

    data = files("autorl_task_alfworld") / "data"
    rows = []
    for name in ("games_train.jsonl", "games_eval.jsonl"):
        rows += [json.loads(line) for line in (data / name).read_text().splitlines() if line]
    return rows


def test_every_shipped_goal_parses_into_its_task_type(explorer) -> None:
    rows = shipped_goals()
    kinds = {
        "pick_and_place_simple": ("", 1),
        "pick_two_obj_and_place": ("", 2),
        "look_at_obj_in_light": ("lamp", 1),
        "pick_clean_then_place_in_recep": ("clean", 1),
        "pick_heat_then_place_in_recep": ("heat", 1),
        "pick_cool_then_place_in_recep": ("cool", 1),
    }
    for row in rows:
        goal = explorer.parse_goal(f"You see a bed 1.\nYour task is to: {row['goal']}.")
        assert (goal.transform, goal.count) == kinds[row["task_type"]], row["goal"]
        obj = row["pddl_params"]["object_target"].lower()
        assert goal.obj == obj, row["goal"]
        if goal.transform != "lamp":
            assert goal.target == row["pddl_params"]["parent_target"].lower(), row["goal"]
    with pytest.raises(ValueError, match="no ALFWorld goal template"):
        explorer.parse_goal("Your task is to: juggle three apples.")


def test_observation_parsing(explorer) -> None:
    first = (
        "You are in the middle of a room. Looking quickly around you, you see a drawer 2, a "
        "drawer 1, and a sinkbasin 1.\nYour task is to: put a clean mug in shelf."
    )
    assert explorer.receptacles(first) == ["drawer 2", "drawer 1", "sinkbasin 1"]
    assert explorer.seen("On the desk 1, you see a mug 1, a desklamp 1, and a pen 2.") == [
        "mug 1",
        "desklamp 1",
        "pen 2",
    ]
    assert explorer.seen("On the bed 1, you see nothing.") == []
    # the rule in action: next listed receptacle, open what is closed, take what is wanted
    assert explorer.next_action([first], []) == "go to drawer 2"
    closed = "You arrive at drawer 2. The drawer 2 is closed."
    assert explorer.next_action([first, closed], ["go to drawer 2"]) == "open drawer 2"
    opened = "You open the drawer 2. The drawer 2 is open. In it, you see a mug 3."
    acts = ["go to drawer 2", "open drawer 2"]
    assert explorer.next_action([first, closed, opened], acts) == "take mug 3 from drawer 2"
    took = "You pick up the mug 3 from the drawer 2."
    acts.append("take mug 3 from drawer 2")
    assert explorer.next_action([first, closed, opened, took], acts) == "go to sinkbasin 1"


@pytest.mark.e2e  # the real ALFWorld engine, many games
def test_explorer_wins_train_games_of_every_type_in_the_real_engine(
    alfworld_workspace: Path,
) -> None:
    import autorl_kit as kit
    import explorer
    import interactive

    chosen: dict[str, list[str]] = {}
    for row in kit.load_train():
        chosen.setdefault(row["task_type"], [])
        if len(chosen[row["task_type"]]) < 2:
            chosen[row["task_type"]].append(row["session_id"])
    assert len(chosen) == 6
    results = Counter()
    for session_ids in chosen.values():
        for session_id in session_ids:
            episode = interactive.demonstrate(kit, session_id, explorer.next_action)
            results[episode["success"]] += 1
            actions = [s["action"] for s in episode["steps"]]
            assert len(actions) <= kit.eval_max_steps()
            # only what the prompt shows: every object or receptacle an action names
            # ("mug 3", "drawer 2") is in the prompt the grader sends before it
            for step in episode["steps"]:
                prompt = "\n".join(m["content"] for m in step["messages"])
                for name in re.findall(r"[a-z]+ \d+", step["action"]):
                    assert name in prompt, (step["action"], name)
            assert episode["steps"][0]["messages"] == kit.build_messages(
                [kit.make_env().reset(session_id)[0]], [], kit.HISTORY_WINDOW
            )
    assert results == Counter({True: 12})


def test_decision_steps_are_repeated_search_steps_are_not(alfworld_workspace: Path) -> None:
    import recipe

    actions = [
        "go to drawer 2",  # search
        "open drawer 2",  # search
        "take mug 3 from drawer 2",  # decision
        "go to sinkbasin 1",  # decision (holding)
        "clean mug 3 with sinkbasin 1",  # decision
    ]
    steps = [{"action": a} for a in actions]
    repeated = [s["action"] for s in recipe.weighted_steps(steps, 3)]
    assert repeated == actions[:2] + [a for a in actions[2:] for _ in range(3)]
    assert recipe.weighted_steps(steps, 0) == steps  # never fewer than once


@pytest.mark.e2e  # the real ALFWorld engine, many games
def test_room_variants_are_episodes_the_engine_plays_the_same_way(
    alfworld_workspace: Path,
) -> None:
    """A variant's room lacks receptacles that played no part; replayed in the real engine on
    the same game, its actions reach the same observations (the removed receptacles were
    only searched), and the explorer would choose every one of them."""
    import random

    import autorl_kit as kit
    import explorer
    import interactive

    rng = random.Random(0)
    checked = 0
    for session_id in kit.train_ids()[:6]:
        episode = interactive.demonstrate(kit, session_id, explorer.next_action)
        observations = episode["observations"]
        actions = [s["action"] for s in episode["steps"]]
        variant = explorer.room_variant(observations, actions, rng)
        if variant is None:
            continue
        new_obs, new_actions = variant
        room, smaller = explorer.receptacles(observations[0]), explorer.receptacles(new_obs[0])
        assert set(smaller) < set(room) and [r for r in room if r in smaller] == smaller
        assert new_obs[0].endswith(observations[0].split("\n")[-1])  # same task line
        assert len(new_actions) <= len(actions)
        replayed = interactive.replay(kit, session_id, new_actions)
        assert replayed["success"]
        assert replayed["observations"][1:] == new_obs[1:]
        checked += 1
    assert checked >= 3


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_slipping_explorer_trains_on_recoveries_never_on_slips(alfworld_workspace: Path) -> None:
    import random

    import autorl_kit as kit
    import interactive
    import recipe

    policy, slips = recipe.slipping_explorer(0.3, random.Random(1))
    episode = interactive.demonstrate(kit, kit.train_ids()[0], policy)
    assert slips, "a 30 % slip rate slipped at least once"
    rows = recipe.weighted_steps(episode["steps"], 1, frozenset(slips))
    slipped = [episode["steps"][i] for i in slips]
    assert len(rows) == len(episode["steps"]) - len(slips)
    assert not any(row is step for row in rows for step in slipped)
    # a recovery row's prompt shows the slip (the state a trained model's mistake leads to)
    after = min(slips) + 1
    if after < len(episode["steps"]):
        prompt = episode["steps"][after]["messages"]
        assert any(m["content"] == episode["steps"][min(slips)]["action"] for m in prompt)


@pytest.mark.e2e  # the real ALFWorld engine, many games
def test_the_recipe_trains_and_samples_in_the_reference_raw_text_format(
    alfworld_reference_workspace: Path,
) -> None:
    """With ALFWorld's reference prompt the grader sends raw text and stops at a newline: the
    recipe's SFT rows are those texts with `` <action>\\n`` as the reply, its rollouts are
    sampled from the same texts and end at the first newline, and the explorer still wins."""
    import autorl_kit as kit
    import explorer
    import interactive
    from recipe_common import load_base

    assert kit.PROMPT == "reference"
    ids = kit.train_ids()[:2]
    episode = interactive.demonstrate(kit, ids[0], explorer.next_action, max_steps=50)
    assert episode["success"]
    rows, episodes = interactive.expert_rows(kit, ids)
    assert episodes == 2
    first = kit.expert_episode(ids[0])["steps"][0]
    assert rows[0]["prompt"] == first["prompt"] and isinstance(first["prompt"], str)
    model, tokenizer = load_base(alfworld_reference_workspace / "models" / "base")
    prompt_ids, reply_ids = interactive.tokenize_rows(tokenizer, rows[:1], kit=kit)[0]
    assert prompt_ids == tokenizer(first["prompt"])["input_ids"]
    assert tokenizer.decode(reply_ids) == f" {first['action']}\n"
    played = interactive.play(
        model, tokenizer, kit, ids[:1], group_size=2, temperature=1.0, max_new_tokens=6
    )
    stops = interactive.newline_tokens(tokenizer)
    for ep in played:
        assert all("\n" not in action for action in ep.actions)
        for i, (prompt, reply) in enumerate(ep.turns):
            text = kit.grader_prompt(ep.session_id, ep.observations[: i + 1], ep.actions[:i])
            assert prompt == tokenizer(text)["input_ids"]
            assert len(reply) == 6 or reply[-1] in stops or reply[-1] == tokenizer.eos_token_id
