"""The reference's own prompt (task option prompt = "reference"): RD-Agent's autorl_bench
ALFWorld evaluator (benchmarks/alfworld/eval.py, commit 471eb30), the ReAct paper's loop.

The examples file is the user's download; these tests write a synthetic one with the same keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autorl_task_alfworld import official, protocol_reference
from autorl_task_alfworld.env import AlfWorldEnv, process_ob, reference_observation
from autorl_task_alfworld.games import engine_logic, materialize, read_records
from autorl_task_alfworld.prompt import (
    REACT_PROMPTS_FILE,
    REFERENCE_KEYS,
    STOP,
    build_reference_prompt,
    load_react_prompts,
    reference_action,
    reference_key,
    reference_prefix,
    required_examples,
)
from autorl_task_alfworld.task import SHIPPED, AlfWorldTask, parse_options
from autorl_testing.workspace import run_kit
from react_examples import write_examples

from autorl.errors import ConfigError
from autorl.types import PreparedTask, TaskContext


@pytest.fixture(scope="module")
def examples_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_examples(tmp_path_factory.mktemp("react") / REACT_PROMPTS_FILE)


@pytest.fixture(scope="module")
def reference_prepared(tmp_path_factory: pytest.TempPathFactory, examples_file: Path):
    """The shipped games with the reference prompt (2 eval games, 6 train games)."""
    return AlfWorldTask().prepare(
        TaskContext(
            cache_dir=tmp_path_factory.mktemp("cache"),
            options={
                "prompt": "reference",
                "react_prompts": str(examples_file),
                "eval_size": 2,
                "train_size": 6,
                "max_steps": 3,
            },
        )
    )


def test_reference_strings_numbers_and_key_mapping(examples_file: Path) -> None:
    examples = load_react_prompts(examples_file)
    assert REFERENCE_KEYS == (
        ("pick_and_place", "put"),
        ("pick_clean_then_place", "clean"),
        ("pick_heat_then_place", "heat"),
        ("pick_cool_then_place", "cool"),
        ("look_at_obj", "examine"),
        ("pick_two_obj", "puttwo"),
    )
    assert {t: reference_key(t) for t in sorted(official.TASK_TYPES)} == {
        "look_at_obj_in_light": "examine",
        "pick_and_place_simple": "put",
        "pick_clean_then_place_in_recep": "clean",
        "pick_cool_then_place_in_recep": "cool",
        "pick_heat_then_place_in_recep": "heat",
        "pick_two_obj_and_place": "puttwo",
    }
    with pytest.raises(ValueError, match="no ReAct examples"):
        reference_key("slice_something")
    assert reference_prefix(examples, "pick_heat_then_place_in_recep") == (
        "Interact with a household to solve a task. Here are two examples.\n"
        "<react heat 1>\n> go to x 1\nOK.\n"
        "<react heat 0>\n> go to x 0\nOK.\n"
        "\nHere is the task.\n"
    )
    prompt = build_reference_prompt(
        "P|", ["room\nYour task is to: x.", "obs 1", "OK."], ["go to a 1", "think: hm"]
    )
    assert prompt == "P|room\nYour task is to: x.\n> go to a 1\nobs 1\n> think: hm\nOK.\n>"
    assert build_reference_prompt("P|", ["o"], []) == "P|o\n>"
    with pytest.raises(ValueError, match="one more observation"):
        build_reference_prompt("P|", ["o"], ["look"])
    assert STOP == ("\n",) and protocol_reference.STOP == ("\n",)
    assert reference_action("  go to  desk 1 \n") == "go to  desk 1"
    assert reference_action(" \n ") is None
    assert protocol_reference.extract_action(" Think: x ") == "Think: x"
    assert process_ob("You arrive at loc 12. On the desk 1, you see a pen 1.") == (
        "On the desk 1, you see a pen 1."
    )
    assert process_ob("You arrive at desk 1. On it.") == "You arrive at desk 1. On it."
    banner = "-= Welcome =-\n\nYou are in a room.\n\nYour task is to: x."
    assert reference_observation(banner) == "You are in a room.\nYour task is to: x."
    assert len(required_examples()) == 12


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_verbatim_env_plays_as_the_reference(tmp_path: Path) -> None:
    record = read_records(SHIPPED["eval"])[0]
    domain, grammar = engine_logic()
    games = {record.id: materialize(record, tmp_path / record.id, domain, grammar)}
    env = AlfWorldEnv(games, max_steps=6, verbatim=True)
    observation, _ = env.reset(record.id)
    assert observation == reference_observation(env._state.feedback)
    assert observation.endswith(f"Your task is to: {record.goal}.")
    assert env.step("think: find it")[0] == "OK."
    # only the lower-case prefix is a thought; the action is not white-space folded
    observation, _, _, info = env.step("Think: find it")
    assert observation == "Nothing happens." and info["valid"] is False
    observation, _, _, info = env.step("go to  countertop 1")
    assert observation == "Nothing happens." and info["valid"] is False
    observation, _, _, info = env.step("go to countertop 1")
    assert observation.startswith("You arrive at countertop 1.") and info["valid"]
    observation, _, _, info = env.step("")
    assert observation == "Nothing happens." and info["steps"] == 5
    assert env.step("look")[2] is True  # 6 steps: over
    folded = AlfWorldEnv(games, max_steps=6)  # the chat mode folds white space
    folded.reset(record.id)
    assert folded.step("go to  countertop 1")[0].startswith("You arrive at countertop 1.")
    assert folded.step("Think: x")[0] == "OK."


def _prepare(cache: Path, **options: object) -> PreparedTask:
    return AlfWorldTask().prepare(TaskContext(cache_dir=cache, options=options))


def _fake_official(root: Path) -> Path:
    for split in ("train", "valid_unseen"):
        (root / "json_2.1.1" / split).mkdir(parents=True)
    return root


def test_prompt_option_defaults_and_refusals(tmp_path: Path, examples_file: Path) -> None:
    assert parse_options({}, environ={}).prompt == "chat"
    data = _fake_official(tmp_path / "alfworld")
    # reference mode (data_path) defaults to the reference prompt: its file must be there
    with pytest.raises(ConfigError, match=r"alfworld_3prompts\.json .* does not exist") as info:
        parse_options({"data_path": str(data)}, environ={})
    assert "autorl reference download" in info.value.hint and 'prompt = "chat"' in info.value.hint
    assert parse_options({"data_path": str(data), "prompt": "chat"}, environ={}).prompt == "chat"
    write_examples(data / REACT_PROMPTS_FILE)
    settings = parse_options({"data_path": str(data)}, environ={})
    assert (settings.prompt, settings.react_prompts) == ("reference", data / REACT_PROMPTS_FILE)
    write_examples(data / REACT_PROMPTS_FILE, drop="react_cool_0")
    with pytest.raises(ConfigError, match=r"lacks the example\(s\) react_cool_0") as info:
        parse_options({"data_path": str(data)}, environ={})
    assert "autorl reference download" in info.value.hint
    with pytest.raises(ConfigError, match="neither react_prompts nor data_path"):
        parse_options({"prompt": "reference"}, environ={})
    with pytest.raises(ConfigError, match="only read with prompt"):
        parse_options({"react_prompts": str(examples_file)}, environ={})
    with pytest.raises(ConfigError, match="prompt: Input should be 'chat' or 'reference'"):
        parse_options({"prompt": "react"}, environ={})
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(ConfigError, match="must hold a JSON object"):
        parse_options({"prompt": "reference", "react_prompts": str(tmp_path / "bad.json")})


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_prepared_reference_config_contract_and_protocol(
    reference_prepared: PreparedTask, examples_file: Path
) -> None:
    config = reference_prepared.evaluator_config
    assert reference_prepared.contract == "autorl_task_alfworld.protocol_reference"
    assert (config["max_new_tokens"], config["temperature"], config["max_steps"]) == (100, 0.0, 3)
    assert config["react_prompts"] == str(examples_file)
    assert config["react_prompts_sha256"] == protocol_reference.file_sha256(examples_file)
    assert "RAW TEXT, no chat template" in reference_prepared.description
    assert set(config) - {"max_new_tokens", "batch_size", "temperature", "history_window"} == set(
        protocol_reference.ENV_OPTIONS
    )
    rows = [json.loads(line) for line in reference_prepared.eval_path.read_text().splitlines()]
    env = protocol_reference.make_env(config, reference_prepared.eval_path)
    observation, info = env.reset(rows[0]["session_id"])
    examples = load_react_prompts(examples_file)
    prefix = reference_prefix(examples, rows[0]["task_type"])
    assert (info["task_type"], info["prompt_prefix"]) == (rows[0]["task_type"], prefix)
    step = env.step("think: first")[0]
    prompt = protocol_reference.build_messages([observation, step], ["think: first"], 0, info=info)
    assert prompt == prefix + observation + "\n> think: first\nOK.\n>"
    with pytest.raises(ValueError, match="prompt_prefix"):
        protocol_reference.build_messages([observation], [], 0)
    with pytest.raises(ValueError, match="changed since the task was prepared"):
        protocol_reference.make_env(
            {**config, "react_prompts_sha256": "0" * 64}, reference_prepared.eval_path
        )


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_kit_serves_the_grader_prompt(reference_prepared: PreparedTask, tmp_path: Path) -> None:
    kit_dir = reference_prepared.kit_dir
    assert kit_dir is not None and (kit_dir / REACT_PROMPTS_FILE).is_file()
    config = json.loads((kit_dir / "alfworld_games" / "config.json").read_text())
    assert config["prompt"] == "reference"
    script = """
sid = kit.train_ids()[0]
episode = kit.expert_episode(sid)
env = kit.make_env()
print(json.dumps({"prompt": kit.PROMPT, "verbatim": env.verbatim, "type": kit.task_type(sid),
                  "success": episode["success"], "steps": episode["steps"],
                  "action": kit.grader_action("  go to desk 1 ")}))
"""
    out = run_kit(tmp_path / "workspace", script, kit_dir=kit_dir, timeout=300)
    assert (out["prompt"], out["verbatim"], out["success"]) == ("reference", True, True)
    assert out["action"] == "go to desk 1"
    steps = out["steps"]
    prefix = reference_prefix(load_react_prompts(kit_dir / REACT_PROMPTS_FILE), out["type"])
    first = steps[0]["prompt"]
    assert isinstance(first, str) and first.startswith(prefix) and first.endswith("\n>")
    observation = first[len(prefix) : -2]
    second = steps[1]["prompt"]
    assert second.startswith(first + f" {steps[0]['action']}\n") and second.endswith("\n>")
    assert isinstance(steps[0]["messages"], list)  # the chat form stays for chat recipes
    assert observation.startswith("You are in the middle of a room.")


def test_download_refuses_clearly_offline(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(official, "REACT_PROMPTS_URL", "http://127.0.0.1:9/alfworld.json")
    with pytest.raises(ConfigError, match="cannot fetch the ReAct examples") as info:
        AlfWorldTask().download(tmp_path / "data")
    assert "ysymyth/ReAct" in info.value.hint
    assert not (tmp_path / "data" / "json_2.1.1").exists()  # the 2 GB download never started
    wrong = write_examples(tmp_path / "wrong.json")
    monkeypatch.setattr(official, "REACT_PROMPTS_URL", wrong.as_uri())
    with pytest.raises(ConfigError, match="not the expected"):
        AlfWorldTask().download(tmp_path / "data")
    assert not (tmp_path / "data" / REACT_PROMPTS_FILE).exists()
    monkeypatch.setattr(official, "REACT_PROMPTS_SHA256", protocol_reference.file_sha256(wrong))
    official.fetch_react_prompts(tmp_path / "ok" / REACT_PROMPTS_FILE)
    assert (tmp_path / "ok" / REACT_PROMPTS_FILE).read_bytes() == wrong.read_bytes()


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_rollout_evaluator_plays_the_raw_text_prompt(
    reference_prepared: PreparedTask, tmp_path: Path
) -> None:
    """The rollout evaluator on the tiny model with the reference prompt: raw text, stop at the
    newline, 100 new tokens, the action the reply stripped; the first reply is what the model
    continues from the protocol's prompt, with no chat template."""
    import autorl_evaluator_rollout.evaluator as rollout
    import autorl_model_tiny.model as tiny
    from autorl_evaluator_rollout.contract import INTERACTIVE
    from autorl_hf.generation import Generator

    from autorl.contracts import load_contract
    from autorl.types import EvalRequest

    model = tiny.TinyModel().materialize(tmp_path / "models").path
    config = dict(reference_prepared.evaluator_config)
    assert config["max_new_tokens"] == 100
    result = rollout.RolloutEvaluator().evaluate(
        EvalRequest(
            model_dir=model,
            eval_path=reference_prepared.eval_path,
            contract=load_contract(INTERACTIVE, reference_prepared.contract),
            config={**config, "device": "cpu"},
            work_dir=tmp_path / "work",
        )
    )
    episodes = [json.loads(line) for line in result.details_path.read_text().splitlines()]
    assert result.n == 2 and all(e["steps"] == 3 for e in episodes)
    for episode in episodes:
        assert all("\n" not in reply for reply in episode["replies"])
        assert episode["actions"] == [reply.strip() for reply in episode["replies"]]
        answers = zip(episode["actions"], episode["observations"][1:], strict=True)
        assert all(obs == "OK." for action, obs in answers if action.startswith("think:"))
    env = protocol_reference.make_env(config, reference_prepared.eval_path)
    observation, info = env.reset(episodes[0]["session_id"])
    assert observation == episodes[0]["observations"][0]
    prompt = protocol_reference.build_messages([observation], [], 0, info=info)
    first = Generator(model, device="cpu").completions([prompt], max_new_tokens=100, stop=STOP)[0]
    assert episodes[0]["replies"][0] == first.text
