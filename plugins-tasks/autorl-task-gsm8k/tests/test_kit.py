"""The answer extraction and reward shared by the grader and the workspace kit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autorl_task_gsm8k import kit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so 3 + 4 = 7\n#### 7", "7"),
        ("#### 1,234", "1234"),
        ("#### $1,234.50", "1234.5"),
        ("#### 5.0", "5"),
        ("#### 5.", "5"),
        ("####-3", "-3"),
        ("#### +12", "12"),
        ("#### 007", "7"),
        ("#### -0", "0"),
        ("first #### 4 then #### 5", "4"),  # the first committed answer counts
        ("#### 12 apples", "12"),
        ("The answer is 42.", "42"),  # no marker: the last number
        ("I had 3, gave 2, so 1,000 left", "1000"),
        ("3,4 and 5", "5"),
        ("0.25 of them", "0.25"),
        ("#### x, the answer is 9", "9"),  # a marker without a number falls back
        ("no number here", None),
        ("", None),
    ],
)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert kit.extract_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1,000", "1000"),
        ("2.50", "2.5"),
        ("-7.000", "-7"),
        ("abc", None),
        (None, None),
        ("1e3", "1000"),
        ("nan", None),
        ("$5", "5"),
    ],
)
def test_normalize_number(text: str | None, expected: str | None) -> None:
    assert kit.normalize_number(text) == expected


def test_reward_exact_format_and_wrong() -> None:
    assert kit.reward("... #### 18", "18") == 1.0
    assert kit.reward("the result is 18", "18") == 1.0  # correct without the marker
    assert kit.reward("#### 17", "18") == kit.FORMAT_REWARD
    assert kit.reward("maybe 17", "18") == 0.0
    assert kit.is_correct("#### 1,000.0", "1000")


def test_trl_reward_accepts_text_and_conversational_completions() -> None:
    completions = ["#### 3", [{"role": "assistant", "content": "#### 4"}], "nothing"]
    assert kit.trl_reward(completions, answer=["3", "5", "1"], prompts=None) == [
        1.0,
        kit.FORMAT_REWARD,
        0.0,
    ]


def test_build_messages_uses_the_template() -> None:
    messages = kit.build_messages("  How many?  ")
    assert messages == [
        {"role": "user", "content": kit.PROMPT_TEMPLATE.format(question="How many?")}
    ]
    assert "####" in messages[0]["content"]


def test_load_train_reads_the_workspace_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data").mkdir()
    row = {"id": "train-0", "question": "q", "answer": "1", "solution": "#### 1"}
    (tmp_path / "data" / "train.jsonl").write_text(json.dumps(row) + "\n\n")
    monkeypatch.setenv("AUTORL_WORKSPACE", str(tmp_path))
    assert kit.load_train() == [row]


def test_load_train_errors_name_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTORL_WORKSPACE", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"data/train\.jsonl"):
        kit.load_train()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"ok": 1}\n{broken\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2"):
        kit.load_train(bad)


def test_kit_uses_only_the_standard_library() -> None:
    import ast
    import sys

    tree = ast.parse(Path(kit.__file__).read_text())
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    imported.discard("__future__")
    # autorl_task_common's kit modules (standard library only) are copied into the kit beside it
    allowed = {*sys.stdlib_module_names, "autorl_task_common"}
    assert imported <= allowed, imported - allowed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so 3 + 4 = 7\nThe answer is 7\n", "7"),
        ("The answer is 4\n\nQuestion: Tom has 9 apples", "4"),  # a made-up next question
        ("<think>maybe 12</think>It is 5.50 dollars", "5.5"),
        ("They sold 1,000 pens", "0"),  # the reference's pattern splits at the comma
        ("The answer is -3", "-3"),
        ("no number at all", None),
    ],
)
def test_reference_extraction_is_opencompass_gsm8k_postprocess(text: str, expected: str) -> None:
    from autorl_task_gsm8k.kit import REFERENCE

    assert REFERENCE.extract_answer(text) == expected


def test_the_installed_kit_stays_autorls_protocol() -> None:
    """Without a workspace config.json beside it, the module is autorl's protocol: the
    reference's lives in ``REFERENCE`` and never changes the default grading."""
    from autorl_task_gsm8k import kit

    assert kit.ACTIVE is None
    assert kit.build_messages("Q?") == [
        {"role": "user", "content": kit.PROMPT_TEMPLATE.format(question="Q?")}
    ]
    assert kit.extract_answer("The answer is 4\n#### 5") == "5"
    assert not kit.REFERENCE.has_final_answer_line("#### 5")
