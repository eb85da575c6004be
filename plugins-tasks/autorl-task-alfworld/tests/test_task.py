"""The task: prepare, options, the train-only kit and workspace, the protocol, official data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autorl_runner.workspace import build_workspace, make_writable
from autorl_task_alfworld import official, protocol
from autorl_task_alfworld.prompt import (
    EXAMPLE_CLEAN,
    REACT_PROMPTS_FILE,
    build_messages,
    extract_action,
)
from autorl_task_alfworld.task import DATA_ENV, AlfWorldTask, parse_options
from autorl_testing import conformance
from autorl_testing.workspace import run_kit
from react_examples import write_examples

from autorl.errors import ConfigError
from autorl.types import PreparedTask, TaskContext


def prepare(cache: Path, **options: object) -> PreparedTask:
    return AlfWorldTask().prepare(TaskContext(cache_dir=cache, options=options))


class TestAlfWorldConformance(conformance.TaskConformance):
    plugin_module = "autorl_task_alfworld.plugin"


def _eval_rows(prepared: PreparedTask) -> list[dict]:
    return [json.loads(line) for line in prepared.eval_path.read_text().splitlines()]


def test_prepare_splits_config_and_metric(prepared: PreparedTask) -> None:
    train = prepared.train_files[0].read_text().splitlines()
    assert (len(train), len(_eval_rows(prepared))) == (120, 40)
    assert prepared.evaluator == "rollout" and prepared.metric == "success_rate"
    config = prepared.evaluator_config
    assert prepared.contract == "autorl_task_alfworld.protocol"
    assert config["max_steps"] == 50 and config["temperature"] == 0.0
    assert {"max_new_tokens", "batch_size", "history_window"} <= set(config)
    assert "Your task is to" in prepared.description and "success rate" in prepared.description


def test_options_resize_and_limit(tmp_path: Path) -> None:
    small = prepare(tmp_path, eval_size=4, train_size=10, max_steps=10)
    assert len(_eval_rows(small)) == 4
    assert len(small.train_files[0].read_text().splitlines()) == 10
    assert small.evaluator_config["max_steps"] == 10
    assert small.kit_dir is not None
    assert len((small.kit_dir / "alfworld_games" / "index.jsonl").read_text().splitlines()) == 10
    config = json.loads((small.kit_dir / "alfworld_games" / "config.json").read_text())
    # the kit's make_env() default and prompt window follow the grader's
    assert config == {"max_steps": 10, "history_window": 3, "prompt": "chat"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"split": "x"}, "unknown option 'split'"),
        ({"eval_size": 0}, "eval_size: Input should be greater than 0"),
        ({"max_steps": "10"}, "max_steps: Input should be a valid integer"),
        ({"train_size": True}, "train_size: Input should be a valid integer"),
        ({"eval_size": 41}, "the shipped set has 40 eval games"),
        ({"data_path": "/nonexistent/alfworld"}, "is not a directory"),
        ({"data_path": 3}, "data_path: Input is not a valid path"),
    ],
)
def test_bad_options_are_precise_errors(tmp_path: Path, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        prepare(tmp_path, **options)
    assert caught.value.hint


def test_alfworld_data_variable_is_the_default_data_path(tmp_path: Path) -> None:
    assert parse_options({}, environ={}).data_path is None
    # alfworld sets $ALFWORLD_DATA to its download cache on import: empty means shipped games
    assert parse_options({}, environ={DATA_ENV: str(tmp_path)}).data_path is None
    _fake_official(tmp_path / "alfworld")
    chat = {"prompt": "chat"}  # the reference prompt's examples file is not there
    chosen = parse_options(chat, environ={DATA_ENV: str(tmp_path / "alfworld")}).data_path
    assert chosen == (tmp_path / "alfworld").resolve()
    with pytest.raises(ConfigError, match=r"task option data_path = .* lacks json_2\.1\.1/train"):
        parse_options({"data_path": str(tmp_path)}, environ={})


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_protocol_plays_the_eval_games(prepared: PreparedTask) -> None:
    ids = protocol.load_sessions(prepared.eval_path)
    assert ids == [row["session_id"] for row in _eval_rows(prepared)]
    env = protocol.make_env({"max_steps": 2}, prepared.eval_path)
    observation, _ = env.reset(ids[-1])
    goal = _eval_rows(prepared)[-1]["goal"]
    assert observation.endswith(f"Your task is to: {goal}.")
    _, _, done, info = env.step("look")
    _, _, done, info = env.step("inventory")
    assert done and info["success"] is False
    assert protocol.episode_metrics(info) == {"steps": 2.0}
    with pytest.raises(KeyError):
        env.reset("train-000")


def _scan(root: Path) -> str:
    parts = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            parts.append(path.name + "\n" + path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def test_no_eval_game_reaches_the_kit_or_the_workspace(
    prepared: PreparedTask, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    workspace = tmp_path / "workspace"
    build_workspace(workspace, prepared, model)
    try:
        text = _scan(workspace)
    finally:
        make_writable(workspace)
    assert "autorl_kit.py" in text and "train-000" in text
    eval_games = json.loads(json.dumps(_eval_rows(prepared)))
    for row in eval_games:
        assert row["session_id"] not in text
        assert row["goal"] not in text, row["goal"]
    assert "eval_games" not in text and "games_eval" not in text and "eval.jsonl" not in text


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_kit_runs_the_engine_on_train_games_only(prepared: PreparedTask, tmp_path: Path) -> None:
    assert prepared.kit_dir is not None
    script = """
ids = kit.train_ids()
episode = kit.expert_episode(ids[1])
env = kit.make_env(max_steps=3)
assert kit.make_env().max_steps == kit.eval_max_steps() == 50
try:
    env.reset("eval-000")
    refused = False
except KeyError:
    refused = True
print(json.dumps({"n": len(ids), "success": episode["success"], "reward": episode["reward"],
                  "refused": refused, "steps": episode["steps"],
                  "window": kit.HISTORY_WINDOW, "modules": sorted(sys.modules)}))
"""
    out = run_kit(tmp_path / "workspace", script, kit_dir=prepared.kit_dir, timeout=300)
    assert (out["n"], out["success"], out["reward"], out["refused"]) == (120, True, 1.0, True)
    assert "autorl_task_alfworld" not in out["modules"] and "autorl" not in out["modules"]
    assert "torch" not in out["modules"]
    steps = out["steps"]
    first = steps[0]["messages"]
    assert first == build_messages(
        [first[0]["content"].split("Here is the task.\n")[1][:-2]], [], out["window"]
    )
    last = steps[-1]["messages"]
    assert last[-1]["role"] == "user" and steps[-1]["action"].split()[0] in {"move", "use", "put"}


def test_prompt_builder_and_action_extraction() -> None:
    messages = build_messages(
        ["obs0", "obs1", "obs2", "obs3"], ["go to a 1", "open a 1", "look"], 2
    )
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert "obs0" in messages[0]["content"] and EXAMPLE_CLEAN in messages[0]["content"]
    assert "your actions were: go to a 1" in messages[0]["content"]
    assert messages[1]["content"] == "open a 1" and messages[-1]["content"] == "obs3\n>"
    with pytest.raises(ValueError, match="one more observation"):
        build_messages(["o"], ["look"])
    assert extract_action("> go to  fridge 1\nmore text") == "go to fridge 1"
    assert extract_action("\n  Action: take apple 1 from countertop 2") == (
        "take apple 1 from countertop 2"
    )
    assert extract_action("think: where is it?") == "think: where is it?"
    assert extract_action("  \n ") is None


def _fake_official(root: Path) -> None:
    """Two splits laid out as alfworld-download writes them (path handling only, no scores)."""
    for split, trials in (("train", 3), ("valid_unseen", 2)):
        for i in range(trials):
            for variant in (
                "pick_and_place_simple-Mug-None-Shelf-1",
                "pick_and_place_simple-Sliced-Apple-None-Fridge-2",
            ):
                game_dir = root / "json_2.1.1" / split / variant / f"trial_T2019_{i}"
                game_dir.mkdir(parents=True)
                traj = {
                    "task_type": "pick_and_place_simple",
                    "pddl_params": {"object_target": "Mug", "parent_target": "Shelf"},
                }
                grammar = f'"rhs": "Your task is to: put a mug in shelf {split} {i}."'
                game = {
                    "pddl_domain": "",
                    "grammar": grammar,
                    "pddl_problem": "",
                    "solvable": i != 1 or split == "valid_unseen",
                }
                (game_dir / "traj_data.json").write_text(json.dumps(traj))
                (game_dir / "game.tw-pddl").write_text(json.dumps(game))


def test_official_layout_is_found_and_split(tmp_path: Path) -> None:
    data = tmp_path / "alfworld"
    _fake_official(data)
    evals = official.collect(data, official.EVAL_SPLIT)
    assert [r["session_id"] for r in evals] == [
        f"valid_unseen/pick_and_place_simple-Mug-None-Shelf-1/trial_T2019_{i}" for i in (0, 1)
    ]
    assert evals[0]["goal"] == "put a mug in shelf valid_unseen 0"
    assert len(official.collect(data, official.TRAIN_SPLIT)) == 2  # unsolvable + Sliced skipped
    write_examples(data / REACT_PROMPTS_FILE)  # autorl reference download fetches the real one
    prepared = prepare(tmp_path / "cache", data_path=str(data))
    rows = _eval_rows(prepared)
    assert prepared.split == "alfworld-valid-unseen" and len(rows) == 2
    assert Path(rows[0]["game_file"]).is_file() and str(data) in rows[0]["game_file"]
    assert prepared.kit_dir is not None
    kit_text = _scan(prepared.kit_dir)
    assert "valid_unseen" not in kit_text and str(data) not in kit_text
    assert len(list((prepared.kit_dir / "alfworld_games").glob("*/game.tw-pddl"))) == 2
    # the reference's protocol on the official games: 50 steps, 100 new tokens, greedy, the whole
    # history in the prompt, the reference's raw-text prompt (RD-Agent's autorl_bench ALFWorld
    # eval); the kit plays the same
    config = prepared.evaluator_config
    assert (config["max_steps"], config["max_new_tokens"], config["temperature"]) == (50, 100, 0.0)
    assert config["history_window"] >= config["max_steps"]
    assert prepared.contract == "autorl_task_alfworld.protocol_reference"
    kit_config = json.loads((prepared.kit_dir / "alfworld_games" / "config.json").read_text())
    assert kit_config == {
        "max_steps": 50,
        "history_window": config["history_window"],
        "prompt": "reference",
    }
    chat = prepare(tmp_path / "chat", data_path=str(data), prompt="chat")
    assert chat.contract == "autorl_task_alfworld.protocol"
    assert chat.evaluator_config["max_new_tokens"] == 100 and "react_prompts" not in (
        chat.evaluator_config
    )
    with pytest.raises(ConfigError, match="holds 2 solvable games, 3 asked"):
        prepare(tmp_path / "c2", data_path=str(data), eval_size=3)
    with pytest.raises(ConfigError, match=r"lacks json_2\.1\.1/valid_unseen"):
        (data / "json_2.1.1" / "valid_unseen").rename(data / "elsewhere")
        prepare(tmp_path / "c3", data_path=str(data))


def test_entry_point_registers_the_task() -> None:
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="autorl.plugins")}
    assert names.get("autorl-task-alfworld") == "autorl_task_alfworld.plugin"
