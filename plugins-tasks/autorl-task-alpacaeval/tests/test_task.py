"""Preparing the alpacaeval task: the shipped offline split, the local AlpacaEval 2.0 loader,
options, the description, and the scripted judge's rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autorl_task_alpacaeval import data
from autorl_task_alpacaeval.task import JUDGE_DIR, SCRIPTED_JUDGE, AlpacaEvalTask
from autorl_testing import conformance
from autorl_testing.workspace import check_generated

from autorl.errors import ConfigError
from autorl.types import TaskContext

ROOT = Path(__file__).resolve().parents[1]


def prepare(cache: Path, **options: object):
    return AlpacaEvalTask().prepare(TaskContext(cache_dir=cache, options=options))


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class TestAlpacaEvalConformance(conformance.TaskConformance):
    plugin_module = "autorl_task_alpacaeval.plugin"


def test_offline_split_is_disjoint_varied_and_judged_by_the_scripted_judge(tmp_path: Path) -> None:
    prepared = prepare(tmp_path)
    train, evals = rows(prepared.train_files[0]), rows(prepared.eval_path)
    assert len(train) >= 120 and len(evals) >= 50
    assert prepared.split == "offline-alpacaeval-style"
    assert prepared.evaluator == "judge"
    assert prepared.metric == "length-controlled win rate"
    train_keys = {data.normalize(r["instruction"]) for r in train}
    assert not train_keys & {data.normalize(r["instruction"]) for r in evals}
    assert set(train[0]) == {"id", "instruction", "input", "output"}
    assert set(evals[0]) == {
        "id",
        "index",
        "instruction",
        "reference",
        "reference_generator",
        "dataset",
    }
    assert [r["index"] for r in evals] == list(range(len(evals)))
    cfg = prepared.evaluator_config
    assert cfg["judge"] == SCRIPTED_JUDGE and Path(cfg["scripts_dir"]) == JUDGE_DIR
    assert (JUDGE_DIR / SCRIPTED_JUDGE.split("/", 1)[1]).is_file()
    assert cfg["glm"] == "length_controlled_minimal" and cfg["glm_data_dir"] is None
    assert Path(cfg["cache_dir"]).is_relative_to(tmp_path)  # the task's cache, not the workspace
    assert "scripted" in prepared.description
    assert (prepared.kit_dir / "autorl_kit.py").is_file()


def test_the_shipped_split_is_what_the_script_writes() -> None:
    check_generated(ROOT / "scripts" / "make_offline_split.py")
    categories = {r["category"] for r in rows(data.OFFLINE_EVAL)}
    assert {"how-to", "rewrite", "list", "explanation", "classification"} <= categories


def test_sizes_and_judge_options(tmp_path: Path) -> None:
    prepared = prepare(tmp_path, train_size=10, eval_size=5, judge="openai/gpt-4.1")
    assert len(rows(prepared.train_files[0])) == 10 and len(rows(prepared.eval_path)) == 5
    assert prepared.split.endswith("-subset-10-5")
    assert prepared.evaluator_config["judge"] == "openai/gpt-4.1"
    assert "openai/gpt-4.1" in prepared.description


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"eval_sise": 3}, r"unknown option 'eval_sise' \(did you mean 'eval_size'\?\)"),
        ({"eval_size": 0}, "eval_size: Input should be greater than 0"),
        ({"train_size": "ten"}, "train_size: Input should be a valid integer"),
        ({"judge": "gpt-4.1"}, "not a driver name"),
        ({"data_path": "/no/such/dir"}, "not a directory"),
    ],
)
def test_bad_options_are_config_errors(tmp_path: Path, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        prepare(tmp_path, **options)


def write_reference(root: Path, *, glm: bool = False) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    evals = [
        {
            "instruction": f"Eval question {i}?",
            "output": f"Reference answer {i}.",
            "generator": "gpt4_1106_preview",
            "dataset": "helpful_base",
        }
        for i in range(6)
    ]
    (root / "alpaca_eval_gpt4_baseline.json").write_text(json.dumps(evals))
    train = [
        {
            "instruction": f"Train question {i}",
            "input": "some input" if i % 2 else "",
            "output": f"Answer {i}.",
        }
        for i in range(2500)
    ]
    train[3]["instruction"] = "eval question 2?"  # an eval instruction in train: dropped
    (root / "alpaca_data.json").write_text(json.dumps(train))
    if glm:
        (root / "instruction_difficulty.csv").write_text("index,instruction_difficulty\n")
        (root / "df_gamed.csv").write_text("model,index,instruction_difficulty\n")
    return root


def test_local_reference_data_follows_the_protocol(tmp_path: Path) -> None:
    prepared = prepare(tmp_path / "cache", data_path=str(write_reference(tmp_path / "ref")))
    train, evals = rows(prepared.train_files[0]), rows(prepared.eval_path)
    assert len(evals) == 6 and evals[0]["reference_generator"] == "gpt4_1106_preview"
    assert len(train) == 1999  # the first 2,000, minus the one that is an eval instruction
    assert not any(r["instruction"] == "eval question 2?" for r in train)
    assert train[1]["input"] == "some input"
    assert prepared.split == "alpacaeval2-reference"
    assert prepared.evaluator_config["glm"] == "length_controlled_minimal"  # no GLM data given
    # the reference's generation (RD-Agent autorl_bench alpacaeval/eval.py): greedy, 512 tokens
    config = prepared.evaluator_config
    assert (config["max_new_tokens"], config["temperature"]) == (512, 0.0)
    assert prepare(tmp_path / "offline").evaluator_config["max_new_tokens"] == 256

    with_glm = prepare(
        tmp_path / "cache2", data_path=str(write_reference(tmp_path / "g", glm=True))
    )
    assert with_glm.evaluator_config["glm"] == "length_controlled_v1"
    assert with_glm.evaluator_config["glm_data_dir"] == str((tmp_path / "g").resolve())


def test_local_reference_errors_say_which_file(tmp_path: Path) -> None:
    root = write_reference(tmp_path / "ref")
    (root / "alpaca_data.json").unlink()
    with pytest.raises(ConfigError, match=r"no the Alpaca train data"):
        prepare(tmp_path / "c", data_path=str(root))
    (root / "alpaca_data.json").write_text('[{"instruction": "x"}]')
    with pytest.raises(ConfigError, match=r"alpaca_data.json row 1: missing .*'output'"):
        prepare(tmp_path / "c", data_path=str(root))


def judge_reply(first: str, second: str) -> str:
    """What the shipped scripted judge answers for two outputs (m = first, M = second)."""
    from autorl_evaluator_judge.prompt import judge_messages, load_template
    from autorl_llm.drivers import open_driver

    driver = open_driver(SCRIPTED_JUDGE, base_dir=str(JUDGE_DIR))
    messages = judge_messages(load_template(), "Explain gravity.", first, second)
    return driver.complete(messages, max_tokens=1).text


GOOD = "Gravity is the force of attraction between objects that have mass; it keeps us grounded."


@pytest.mark.parametrize(
    ("first", "second", "winner"),
    [
        ("", GOOD, "M"),
        (GOOD, "", "m"),
        ("of the of the of the of the of the", GOOD, "M"),
        (GOOD, "100000000000000000000000", "m"),
        ("Yes.", GOOD, "M"),
        (GOOD, "No.", "m"),
        (GOOD, GOOD.upper(), "m"),  # nothing to tell them apart: the first shown
    ],
)
def test_scripted_judge_rules(first: str, second: str, winner: str) -> None:
    assert judge_reply(first, second) == winner
