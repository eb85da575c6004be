"""The task: prepare, options, the train-only kit, the reference loader, the shipped data."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from autorl_task_deepsearchqa import official
from autorl_task_deepsearchqa.corpus import load_questions
from autorl_task_deepsearchqa.task import EVALUATOR_CONFIG
from autorl_testing import conformance
from autorl_testing.workspace import check_generated, run_kit

from autorl.errors import ConfigError

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


class TestDeepSearchQAConformance(conformance.TaskConformance):
    plugin_module = "autorl_task_deepsearchqa.plugin"
    component = "deepsearchqa"


def test_prepare_splits_config_and_metric(prepared, prepare, tmp_path: Path) -> None:
    train = load_questions(prepared.train_files[0])
    evals = load_questions(prepared.eval_path)
    assert (len(train), len(evals)) == (100, 100)
    assert not {q.question for q in train} & {q.question for q in evals}
    assert {q.answer_type for q in evals} == {"single", "set"}
    assert prepared.evaluator == "rollout" and prepared.metric == "accuracy"
    config = prepared.evaluator_config
    assert prepared.contract == "autorl_task_deepsearchqa.protocol"
    assert (config["max_steps"], config["top_k"], config["judge"]) == (6, 3, "rule")
    assert config["search_backend"] == "bm25" and Path(config["corpus_path"]).is_file()
    assert {"max_new_tokens", "batch_size", "history_window", "temperature"} <= set(config)
    assert "search[" in prepared.description and "answer[" in prepared.description
    assert "rule judge" in prepared.description
    small = prepare(tmp_path, eval_size=10, train_size=20, max_steps=4, top_k=5)
    assert len(load_questions(small.eval_path)) == 10
    assert len(load_questions(small.train_files[0])) == 20
    assert (small.evaluator_config["max_steps"], small.evaluator_config["top_k"]) == (4, 5)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"split": "x"}, "unknown option 'split'"),
        ({"eval_size": 0}, "eval_size: Input should be greater than 0"),
        ({"train_size": "10"}, "train_size: Input should be a valid integer"),
        ({"max_steps": 99}, r"max_steps: Input should be less than or equal to 50 \(got 99\)"),
        ({"top_k": True}, "top_k: Input should be a valid integer"),
        ({"eval_size": 101}, "eval_size=101 but the shipped data has 100"),
        ({"data_path": "/nonexistent/dsqa"}, "data_path /nonexistent/dsqa does not exist"),
        ({"search_backend": "bm52"}, "unknown search_backend 'bm52'"),
        ({"search_backend": ""}, "must be a backend name"),
        ({"judge": "gpt-4o"}, "must be 'rule' or '<backend>/<model>'"),
        ({"judge": "nosuch/model"}, "unknown driver 'nosuch'"),
        ({"replay": "/nonexistent/records"}, "replay /nonexistent/records is not a directory"),
    ],
)
def test_bad_options_are_precise_errors(tmp_path: Path, prepare, options, message) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        prepare(tmp_path, **options)
    assert err.value.hint


def _eval_strings(prepared) -> list[str]:
    strings = []
    for question in load_questions(prepared.eval_path):
        strings += [question.session_id, question.question]
    return strings


def test_kit_holds_no_eval_question_or_answer_list(prepared) -> None:
    assert prepared.kit_dir is not None
    files = [p for p in sorted(Path(prepared.kit_dir).rglob("*")) if p.is_file()]
    text = "\n".join(p.read_text(encoding="utf-8") for p in files)
    for needle in _eval_strings(prepared):
        assert needle not in text, needle
    for question in load_questions(prepared.eval_path):
        if question.answer_type == "set":  # an eval answer list, in order, is not in the kit
            assert json.dumps(list(question.answer)) not in text
    assert "questions_eval" not in text and "eval.jsonl" not in text
    assert not any("eval" in p.name for p in files)


def test_kit_runs_train_questions_only_and_gives_sft_data(prepared, tmp_path: Path) -> None:
    eval_id = load_questions(prepared.eval_path)[0].session_id
    script = f"""
env = kit.make_env()
ids = kit.train_ids()
episodes = [kit.expert_episode(i, env) for i in ids]
try:
    env.reset({eval_id!r})
    refused = False
except KeyError:
    refused = True
first = episodes[0]["steps"]
print(json.dumps({{"n": len(env.session_ids), "ok": sum(e["success"] for e in episodes),
                  "refused": refused, "max_steps": env.max_steps, "first": first,
                  "modules": sorted(sys.modules)}}))
"""
    out = run_kit(tmp_path / "workspace", script, kit_dir=prepared.kit_dir, timeout=60)
    assert (out["n"], out["ok"], out["refused"], out["max_steps"]) == (100, 100, True, 6)
    assert "autorl_task_deepsearchqa" not in out["modules"] and "autorl" not in out["modules"]
    assert "torch" not in out["modules"]
    first = out["first"]
    assert first[0]["action"].startswith("search[") and first[-1]["action"].startswith("answer[")
    assert first[0]["messages"][0]["role"] == "user" and len(first[0]["messages"]) == 1
    assert len(first[1]["messages"]) == 3  # question, first search, its results


def test_kit_prompt_is_the_graders_prompt(prepared) -> None:
    from autorl_task_deepsearchqa import protocol

    kit_prompt = (Path(prepared.kit_dir) / "deepsearchqa_env" / "prompt.py").read_text()
    assert kit_prompt == Path(protocol.__file__).with_name("prompt.py").read_text()
    assert EVALUATOR_CONFIG["history_window"] == protocol.HISTORY_WINDOW


def _write_hub_csv(path: Path, n: int = 900) -> None:
    """A file in the hub layout of google/deepsearchqa (DSQA-full.csv), written by the test."""
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(
            fh, fieldnames=["problem", "problem_category", "answer", "answer_type"]
        )
        writer.writeheader()
        for i in range(n):
            if i % 4 == 0:
                answer, kind = f"Alpha {i}, Beta {i}, Gamma {i}", "Set Answer"
            else:
                answer, kind = f"Answer {i}", "Single Answer"
            writer.writerow(
                {
                    "problem": f"Question number {i}?",
                    "problem_category": "Science",
                    "answer": answer,
                    "answer_type": kind,
                }
            )


def test_reference_split_of_the_real_data_set(tmp_path: Path, prepare) -> None:
    data = tmp_path / "deepsearchqa"
    data.mkdir()
    _write_hub_csv(data / "DSQA-full.csv")
    prepared = prepare(tmp_path / "cache", data_path=str(data))
    assert prepared.split == "deepsearchqa-reference"
    train = load_questions(prepared.train_files[0])
    evals = load_questions(prepared.eval_path)
    assert (len(train), len(evals)) == (100, 200)
    assert not {q.session_id for q in train} & {q.session_id for q in evals}
    rows = official.load_questions(data / "DSQA-full.csv")
    expected_train, expected_eval = official.reference_split(rows)
    assert [q.session_id for q in evals] == [q.session_id for q in expected_eval]
    assert [q.session_id for q in train] == [q.session_id for q in expected_train]
    sets = [q for q in evals if q.answer_type == "set"]
    assert sets and len(sets[0].answer) == 3 and sets[0].answer[0].startswith("Alpha")
    # the reference's split: datasets' shuffle(seed=42), rows [0:100] train, [100:300] eval,
    # checked against the datasets library itself when it is installed; 6 steps
    assert prepared.evaluator_config["max_steps"] == 6
    assert prepared.evaluator_config["max_new_tokens"] == 256
    import datasets

    order = datasets.Dataset.from_dict({"i": list(range(len(rows)))}).shuffle(seed=42)["i"]
    assert [q.session_id for q in evals] == [rows[i].session_id for i in order[100:300]]
    assert [q.session_id for q in train] == [rows[i].session_id for i in order[:100]]
    again = prepare(tmp_path / "cache2", data_path=str(data / "DSQA-full.csv"))
    assert Path(again.eval_path).read_bytes() == Path(prepared.eval_path).read_bytes()


def test_reference_file_problems_are_precise_errors(tmp_path: Path, prepare) -> None:
    data = tmp_path / "small"
    data.mkdir()
    _write_hub_csv(data / "DSQA-full.csv", n=50)
    with pytest.raises(ConfigError, match="holds 50 questions, fewer than train_size 100"):
        prepare(tmp_path / "cache", data_path=str(data))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="holds no DeepSearchQA file"):
        prepare(tmp_path / "cache", data_path=str(empty))


def test_shipped_data_matches_its_generator() -> None:
    check_generated(PACKAGE_ROOT / "scripts" / "build_data.py")
    size = sum(p.stat().st_size for p in (PACKAGE_ROOT / "src").rglob("data/*.json"))
    assert size < 2_000_000


def test_entry_point_registers_the_task() -> None:
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="autorl.plugins")}
    assert names.get("autorl-task-deepsearchqa") == "autorl_task_deepsearchqa.plugin"
