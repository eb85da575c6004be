"""Contract A of the rollout evaluator on WebShop: ``make_env``, the expert in lockstep, and a
real evaluation of the tiny model through the registry (as a run does)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autorl_task_webshop import protocol
from autorl_task_webshop.catalog import Goal, load_goals
from autorl_task_webshop.expert import expert_actions
from autorl_task_webshop.task import DATA_DIR, WebShopTask
from autorl_testing import evaluate_prepared

from autorl.errors import ConfigError
from autorl.types import TaskContext

EVAL = DATA_DIR / "goals_eval.json"


def test_sessions_are_ids_and_envs_share_one_shop() -> None:
    ids = protocol.load_sessions(EVAL)
    assert ids[:2] == ["eval-0000", "eval-0001"] and len(ids) == 100
    first = protocol.make_env({}, EVAL)
    second = protocol.make_env({"max_steps": 3}, EVAL)
    assert first.shop is second.shop  # the catalogue and its index are built once
    assert (first.max_steps, second.max_steps) == (50, 3)
    obs, _ = first.reset("eval-0007")
    obs2, _ = second.reset("eval-0008")
    assert "Instruction:" in obs and obs != obs2  # independent sessions
    with pytest.raises(KeyError):
        first.reset("train-0000")


def test_running_out_of_steps_is_a_failure() -> None:
    env = protocol.make_env({"max_steps": 2}, EVAL)
    env.reset("eval-0000")
    assert env.step("search[shoes]")[2] is False
    _, reward, done, info = env.step("click[back to search]")
    assert done and reward == 0.0 and info["success"] is False and info["truncated"]


def test_success_threshold_is_honoured() -> None:
    goal = load_goals(EVAL)[0]
    actions = expert_actions(goal, protocol.load_shop(DATA_DIR / "catalog.json"))
    for threshold, expected in ((0.5, True), (1.0, True), (0.0, True)):
        env = protocol.make_env({"success_threshold": threshold}, EVAL)
        env.reset(goal.session_id)
        for action in actions:
            _, reward, done, info = env.step(action)
        assert done and reward == 1.0 and info["success"] is expected
    env = protocol.make_env({"success_threshold": 1.0}, EVAL)
    env.reset(goal.session_id)
    env.step(actions[0])
    env.step(actions[1])  # the target product, no options chosen: a partial reward
    _, reward, done, info = env.step("click[buy now]")
    assert done and 0 < reward < 1.0 and info["success"] is False


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"max_steps": 0}, "max_steps=0 must be a positive integer"),
        ({"success_threshold": 2}, "success_threshold=2 must be a number in"),
        ({"success_threshold": "high"}, "success_threshold='high' must be"),
        ({"catalog_path": "/nonexistent/catalog.json"}, "is not a file"),
    ],
)
def test_bad_env_config_is_a_precise_error(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        protocol.make_env(config, EVAL)


def expert_policy(goals: list[Goal]):
    """A scripted policy that reads the instruction from the prompt and plays the expert."""
    shop = protocol.load_shop(DATA_DIR / "catalog.json")
    plans = {g.instruction: expert_actions(g, shop) for g in goals}

    def policy(prompts: list[list[dict[str, str]]]):
        from autorl_evaluator_rollout.lockstep import Reply

        replies = []
        for messages in prompts:
            instruction = next(
                line.removeprefix("Instruction: ")
                for line in messages[0]["content"].splitlines()[::-1]
                if line.startswith("Instruction: ")
            )
            done = sum(m["role"] == "assistant" for m in messages)
            replies.append(Reply(f"Action: {plans[instruction][done]}"))
        return replies

    return policy


def test_the_expert_in_lockstep_succeeds_on_every_eval_session() -> None:
    import autorl_evaluator_rollout.lockstep as lockstep_mod

    goals = load_goals(EVAL)[:24]
    lockstep = lockstep_mod.Lockstep(
        make_env=lambda: protocol.make_env({}, EVAL),
        policy=expert_policy(goals),
        build_messages=protocol.build_messages,
        extract_action=protocol.extract_action,
        batch_size=8,
    )
    episodes = lockstep.run([g.session_id for g in goals])
    assert all(e.success and e.reward == 1.0 for e in episodes)
    assert all(e.final_info["purchased"] for e in episodes)
    assert all(e.valid == [True] * e.steps for e in episodes)
    assert lockstep.envs_made == 8 and lockstep.turns < sum(e.steps for e in episodes)


def test_the_tiny_model_plays_the_prepared_task_through_the_registry(tmp_path: Path) -> None:
    import autorl_model_tiny.model as tiny

    prepared = WebShopTask().prepare(
        TaskContext(cache_dir=tmp_path / "cache", options={"eval_size": 4, "max_steps": 3})
    )
    model_dir = tiny.TinyModel().materialize(tmp_path / "models").path
    result = evaluate_prepared(
        "webshop", prepared, model_dir, tmp_path / "work", max_new_tokens=16, device="cpu"
    )
    assert result.n == 4 and 0.0 <= result.score <= 100.0
    episodes = [json.loads(line) for line in result.details_path.read_text().splitlines()]
    assert [e["session_id"] for e in episodes] == [f"eval-{i:04d}" for i in range(4)]
    assert all(e["done"] and e["steps"] <= 3 for e in episodes)
    assert result.metrics["n_episodes"] == 4 and result.metrics["mean_steps"] <= 3
    with pytest.raises(ConfigError, match=r"unknown option.*'max_step'"):
        evaluate_prepared("webshop", prepared, tmp_path / "unused", tmp_path / "work", max_step=3)


def test_the_reference_prompt_plays_in_lockstep_and_on_the_tiny_model(tmp_path: Path) -> None:
    """The reference style end to end: the expert, answering with bare actions as the
    reference asks, wins every session through ``protocol_reference``; the tiny model plays the
    prepared task with that prompt (system message included) through the registry."""
    import autorl_evaluator_rollout.lockstep as lockstep_mod
    import autorl_model_tiny.model as tiny
    from autorl_evaluator_rollout.lockstep import Reply
    from autorl_task_webshop import protocol_reference

    goals = load_goals(EVAL)[:8]
    shop = protocol.load_shop(DATA_DIR / "catalog.json")
    plans = {g.instruction: expert_actions(g, shop) for g in goals}

    def policy(prompts: list[list[dict[str, str]]]) -> list[Reply]:
        replies = []
        for system, user in prompts:
            assert system["role"] == "system" and user["role"] == "user"
            lines = user["content"].splitlines()
            instruction = lines[2].removeprefix("Instruction: ")
            turn = int(lines[-1].removeprefix("Action ").removesuffix(":")) - 1
            replies.append(Reply(f" {plans[instruction][turn]}"))
        return replies

    lockstep = lockstep_mod.Lockstep(
        make_env=lambda: protocol_reference.make_env({}, EVAL),
        policy=policy,
        build_messages=protocol_reference.build_messages,
        extract_action=protocol_reference.extract_action,
        history_window=protocol_reference.HISTORY_WINDOW,
        batch_size=4,
    )
    episodes = lockstep.run([g.session_id for g in goals])
    assert all(e.success and e.valid == [True] * e.steps for e in episodes)

    prepared = WebShopTask().prepare(
        TaskContext(
            cache_dir=tmp_path / "cache",
            options={"eval_size": 2, "max_steps": 2, "prompt": "reference"},
        )
    )
    assert prepared.contract == "autorl_task_webshop.protocol_reference"
    model_dir = tiny.TinyModel().materialize(tmp_path / "models").path
    result = evaluate_prepared(
        "webshop", prepared, model_dir, tmp_path / "work", max_new_tokens=12, device="cpu"
    )
    episodes = [json.loads(line) for line in result.details_path.read_text().splitlines()]
    assert result.n == 2 and all(e["done"] and e["steps"] <= 2 for e in episodes)
    assert all("\n" not in reply for e in episodes for reply in e["replies"])
