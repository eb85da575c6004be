"""The environment in the real ALFWorld engine: reset, steps, invalid actions, limits, expert."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_task_alfworld.env import THINK_REPLY, AlfWorldEnv, first_observation
from autorl_task_alfworld.games import engine_logic, materialize, read_records
from autorl_task_alfworld.task import SHIPPED


@pytest.fixture(scope="module")
def games(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("games")
    domain, grammar = engine_logic()
    records = read_records(SHIPPED["train"])[:6]  # one game of each task type
    return {r.id: materialize(r, root / r.id, domain, grammar) for r in records}


@pytest.mark.slow  # over 1.5 CPU-s: make test, not make check
def test_reset_shows_the_room_and_the_goal(games: dict[str, Path]) -> None:
    env = AlfWorldEnv(games, max_steps=5)
    record = read_records(SHIPPED["train"])[0]
    observation, info = env.reset(record.id)
    assert observation.startswith("You are in the middle of a room.")
    assert observation.endswith(f"Your task is to: {record.goal}.")
    assert "Welcome" not in observation and "UNKNOWN GOAL" not in observation
    assert info["steps"] == 0 and not info["success"]
    assert any(c.startswith("go to ") for c in info["admissible_commands"])


def test_invalid_actions_think_and_the_step_limit(games: dict[str, Path]) -> None:
    env = AlfWorldEnv(games, max_steps=4)
    _, first = env.reset(next(iter(games)))
    go = next(c for c in first["admissible_commands"] if c.startswith("go to "))
    observation, reward, done, info = env.step("fly to the moon")
    assert (observation, reward, done, info["steps"]) == ("Nothing happens.", 0.0, False, 1)
    assert info["valid"] is False  # the rollout evaluator's invalid-action rate reads it
    observation, _, done, info = env.step("")
    assert observation == "Nothing happens." and info["steps"] == 2
    observation, _, done, info = env.step("think: the apple is probably on a countertop")
    assert observation == THINK_REPLY and not done and info["valid"]
    observation, reward, done, info = env.step(go)
    assert done and reward == 0.0 and info["success"] is False and info["steps"] == 4
    assert info["valid"] and observation.startswith(f"You arrive at {go[len('go to ') :]}.")
    assert env.step("look")[2] is True  # stays over


def test_unknown_session_and_step_before_reset() -> None:
    env = AlfWorldEnv({}, max_steps=3)
    with pytest.raises(RuntimeError, match="reset"):
        env.step("look")
    with pytest.raises(KeyError):
        env.reset("eval-000")
    with pytest.raises(ValueError):
        AlfWorldEnv({}, max_steps=0)


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_expert_wins_and_success_ends_the_episode(games: dict[str, Path]) -> None:
    env = AlfWorldEnv(games, max_steps=50, expert=True)
    for session_id in list(games)[:2]:
        _, info = env.reset(session_id)
        actions = []
        done = False
        while not done:
            actions.append(info["expert_action"])
            _, reward, done, info = env.step(actions[-1])
        assert info["success"] and reward == 1.0, actions
        assert env.step("look")[3]["success"]  # a finished episode keeps its outcome
        again, _ = env.reset(session_id)  # a second reset of the same game starts afresh
        assert again.startswith("You are in the middle of a room.")


def test_first_observation_drops_the_banner() -> None:
    text = "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in a room.\n\nYour task is to: x."
    assert first_observation(text) == "You are in a room.\nYour task is to: x."
