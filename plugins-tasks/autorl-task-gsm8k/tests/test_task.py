"""Preparing the gsm8k task: disjoint, deterministic, cached splits; real GSM8K from files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autorl_task_gsm8k import data
from autorl_task_gsm8k.task import KIT_SOURCE, GSM8KTask
from autorl_testing import conformance

from autorl.errors import ConfigError
from autorl.types import TaskContext

SMALL = {"train_size": 60, "eval_size": 20}


def prepare(cache: Path, **options: object):
    return GSM8KTask().prepare(TaskContext(cache_dir=cache, options=options))


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class TestGSM8KConformance(conformance.TaskConformance):
    plugin_module = "autorl_task_gsm8k.plugin"
    task_options = SMALL


def test_offline_split_is_disjoint_and_well_formed(tmp_path: Path) -> None:
    prepared = prepare(tmp_path, **SMALL)
    train, evals = rows(prepared.train_files[0]), rows(prepared.eval_path)
    assert (len(train), len(evals)) == (60, 20)
    assert prepared.split == "offline-gsm-symbolic"
    assert prepared.evaluator == "exact"
    assert prepared.contract == "autorl_task_gsm8k.kit"
    assert "protocol" not in prepared.evaluator_config
    eval_questions = {data.normalize_question(r["question"]) for r in evals}
    train_questions = [data.normalize_question(r["question"]) for r in train]
    assert not eval_questions & set(train_questions)
    assert len(set(train_questions)) == len(train_questions)
    for row in train + evals:
        assert set(row) == {"id", "question", "answer", "solution"}
        assert row["solution"].rstrip().endswith(f"#### {row['answer']}")
        assert "Give the result as your final answer" not in row["question"]
    assert prepared.train_files[0].name == "train.jsonl"


def test_overlapping_generations_are_deduplicated(tmp_path: Path) -> None:
    """Train drawn with the eval seed would repeat every eval question: all must be dropped."""
    evals = data.generate_symbolic(seed=5, size=15, prefix="eval")
    taken = {data.normalize_question(e["question"]) for e in evals}
    train = data.generate_symbolic(seed=5, size=30, prefix="train", exclude=taken)
    assert len(train) == 30
    assert not taken & {data.normalize_question(t["question"]) for t in train}


def test_same_options_give_the_same_split_and_reuse_the_cache(tmp_path: Path) -> None:
    first = prepare(tmp_path / "a", **SMALL)
    second = prepare(tmp_path / "b", **SMALL)
    assert first.eval_path.read_bytes() == second.eval_path.read_bytes()
    assert first.train_files[0].read_bytes() == second.train_files[0].read_bytes()
    stamp = first.eval_path.stat().st_mtime_ns
    again = prepare(tmp_path / "a", **SMALL)
    assert again.eval_path == first.eval_path
    assert again.eval_path.stat().st_mtime_ns == stamp  # not regenerated


def test_changed_parameters_regenerate(tmp_path: Path) -> None:
    first = prepare(tmp_path, **SMALL)
    other_seed = prepare(tmp_path, **SMALL, split_seed=99)
    bigger = prepare(tmp_path, train_size=60, eval_size=25)
    assert other_seed.eval_path != first.eval_path
    assert rows(other_seed.eval_path) != rows(first.eval_path)
    assert len(rows(bigger.eval_path)) == 25


def test_kit_is_a_verbatim_copy_of_the_graders_module(tmp_path: Path) -> None:
    prepared = prepare(tmp_path, **SMALL)
    assert prepared.kit_dir is not None
    # the kit module and the helpers it imports (autorl_task_common.kitio), nothing else
    assert sorted(p.name for p in prepared.kit_dir.iterdir()) == [
        "autorl_kit.py",
        "autorl_task_common",
    ]
    assert (prepared.kit_dir / "autorl_kit.py").read_bytes() == KIT_SOURCE.read_bytes()


def test_description_states_metric_prompt_and_format(tmp_path: Path) -> None:
    text = prepare(tmp_path, **SMALL).description
    for needle in ("exact match", "greedy", "#### <number>", "60 training problems", "20 held"):
        assert needle in text, needle
    assert "Solve the problem step by step" in text


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"train_sise": 10}, r"unknown option 'train_sise' \(did you mean 'train_size'\?\)"),
        ({"train_size": 0}, r"train_size: Input should be greater than 0 \(got 0\)"),
        ({"eval_size": "ten"}, "eval_size: Input should be a valid integer"),
        ({"source": "web"}, "source: Input should be 'offline', 'local' or 'hub'"),
        ({"source": "local"}, "needs data_path"),
        ({"data_path": "/nonexistent/gsm8k"}, "not a directory"),
    ],
)
def test_bad_options_are_precise_errors(tmp_path: Path, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        prepare(tmp_path, **options)


# real GSM8K from local files ------------------------------------------------------------------

OFFICIAL_TRAIN = [
    {
        "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as "
        "many clips in May. How many clips did Natalia sell altogether in April and May?",
        "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
        "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72",
    },
    {
        "question": "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes "
        "of babysitting. How much did she earn?",
        "answer": "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\nWorking 50 minutes, she "
        "earned 0.2 x 50 = $<<0.2*50=10>>10.\n#### 10",
    },
    {  # also in the test file: must be dropped from train
        "question": "Janet has 3 apples and buys 2 more. How many apples does she have?",
        "answer": "3+2=<<3+2=5>>5\n#### 5",
    },
]
OFFICIAL_TEST = [
    {
        "question": "Janet has 3 apples and buys  2 more. How many apples does she have?",
        "answer": "3+2=<<3+2=5>>5\n#### 5",
    },
    {
        "question": "A shop sells 1,200 pens a day. How many in 2 days?",
        "answer": "1200*2=<<1200*2=2400>>2400\n#### 2,400",
    },
]


def write_official(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, items in (("train.jsonl", OFFICIAL_TRAIN), ("test.jsonl", OFFICIAL_TEST)):
        (directory / name).write_text("".join(json.dumps(r) + "\n" for r in items))
    return directory


def test_local_gsm8k_follows_the_reference_protocol(tmp_path: Path) -> None:
    source = write_official(tmp_path / "gsm8k")
    prepared = prepare(tmp_path / "cache", data_path=str(source))
    assert prepared.split == "gsm8k-reference"
    train, test = rows(prepared.train_files[0]), rows(prepared.eval_path)
    assert [r["answer"] for r in train] == ["72", "10"]  # the duplicate of a test question dropped
    assert [r["answer"] for r in test] == ["5", "2400"]
    assert train[0]["solution"] == (
        "Natalia sold 48/2 = 24 clips in May.\n"
        "Natalia sold 48+24 = 72 clips altogether in April and May.\n#### 72"
    )
    assert "real GSM8K" in prepared.description
    # the reference's generation limit (OpenCompass gsm8k_gen: max_out_len 512), greedy
    assert prepared.evaluator_config["max_new_tokens"] == 512
    assert prepared.evaluator_config["temperature"] == 0.0
    # a copy without the reference's four worked examples: the first train problems instead
    # (never a held-out one), and the description says so
    shots = prepared.evaluator_config["few_shot"]
    assert [s["question"][:7] for s in shots] == ["Natalia", "Weng ea"]
    assert "lacks the reference's four" in prepared.description


SHOT_ROWS = [
    {
        "question": f"{opening} (a test stand-in)?",
        "answer": f"{n}*2=<<{n}*2={2 * n}>>{2 * n}\n#### {2 * n}",
    }
    for n, opening in enumerate(data.REFERENCE_SHOT_OPENINGS, 1)
]


def test_reference_prompt_is_opencompass_gsm8k_gen(tmp_path: Path) -> None:
    """On real GSM8K the grader asks as the reference does: its four worked examples (found in
    the train split by their questions, in its order) as earlier chat turns, each user turn
    'Question: ...\\nLet's think step by step\\nAnswer:', each solution ending 'The answer is N';
    the workspace kit's build_messages is that whole prompt, and reads answers the same way."""
    import importlib.util

    from autorl_evaluator_exact.contract import ANSWER
    from autorl_evaluator_exact.evaluator import settings, with_few_shot

    from autorl.contracts import load_contract

    source = tmp_path / "gsm8k"
    source.mkdir()
    train = [OFFICIAL_TRAIN[0], *reversed(SHOT_ROWS), OFFICIAL_TRAIN[1]]
    (source / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train))
    (source / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in OFFICIAL_TEST))
    prepared = prepare(tmp_path / "cache", data_path=str(source))
    shots = prepared.evaluator_config["few_shot"]
    assert [s["question"] for s in shots] == [r["question"] for r in SHOT_ROWS]
    assert shots[1]["solution"] == "2*2=4\nThe answer is 4\n"  # annotations gone, N closes it
    assert prepared.contract == "autorl_task_gsm8k.kit:REFERENCE"
    assert "the reference's four" in prepared.description
    assert "Let's think step by step" in prepared.description

    contract = load_contract(ANSWER, prepared.contract)
    question = OFFICIAL_TEST[1]["question"]
    graded = with_few_shot(contract, settings(dict(prepared.evaluator_config)).few_shot, question)
    assert [m["role"] for m in graded] == ["user", "assistant"] * 4 + ["user"]
    assert graded[0]["content"] == (
        f"Question: {SHOT_ROWS[0]['question']}\nLet's think step by step\nAnswer:"
    )
    assert graded[-1]["content"] == f"Question: {question}\nLet's think step by step\nAnswer:"

    kit_file = Path(prepared.kit_dir) / "autorl_kit.py"
    spec = importlib.util.spec_from_file_location("workspace_kit", kit_file)
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    assert kit.build_messages(question) == graded  # the agent trains on the graded prompt
    reply = "2 pens a day... 1200*2 = 2400\nThe answer is 2400\n\nQuestion: and 7 more?"
    assert contract.extract_answer(reply) == kit.extract_answer(reply) == "2400"
    assert (
        kit.is_correct(reply, "2,400") and kit.reward("The answer is 3", "4") == kit.FORMAT_REWARD
    )


def test_local_gsm8k_parquet_layout(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    main = tmp_path / "gsm8k" / "main"
    main.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(OFFICIAL_TRAIN[:2]), main / "train-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist(OFFICIAL_TEST), main / "test-00000-of-00001.parquet")
    prepared = prepare(tmp_path / "cache", data_path=str(tmp_path / "gsm8k"))
    assert len(rows(prepared.train_files[0])) == 2
    assert rows(prepared.eval_path)[1]["answer"] == "2400"


def test_local_gsm8k_errors_name_file_and_line(tmp_path: Path) -> None:
    source = write_official(tmp_path / "gsm8k")
    (source / "test.jsonl").write_text(
        json.dumps(OFFICIAL_TEST[0]) + "\n" + json.dumps({"question": "q", "answer": "no marker"})
    )
    with pytest.raises(ConfigError, match=r"test.jsonl:2: the answer does not end with"):
        prepare(tmp_path / "cache", data_path=str(source))
    (source / "test.jsonl").unlink()
    with pytest.raises(ConfigError, match="no test split found"):
        prepare(tmp_path / "cache", data_path=str(source))


def test_local_gsm8k_subset_sizes(tmp_path: Path) -> None:
    source = write_official(tmp_path / "gsm8k")
    prepared = prepare(tmp_path / "cache", data_path=str(source), train_size=1, eval_size=1)
    assert len(rows(prepared.train_files[0])) == 1
    assert len(rows(prepared.eval_path)) == 1
    assert prepared.split.startswith("gsm8k-reference-subset")
