"""The shared JSON-lines reader names the file and line of a bad row."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_data.jsonl import read_jsonl

from autorl.errors import ConfigError


def test_rows_blank_lines_and_limit(tmp_path: Path) -> None:
    path = tmp_path / "eval.jsonl"
    path.write_text('{"q": "a", "a": "1"}\n\n{"q": "b", "a": "2"}\n')
    assert [r["q"] for r in read_jsonl(path, required=("q", "a"))] == ["a", "b"]
    assert len(read_jsonl(path, required=("q",), limit=1)) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"q": "a", "a": "1"}\n{not json\n', "eval.jsonl:2: not valid JSON"),
        ('["a"]\n', "eval.jsonl:1: expected a JSON object"),
        ('{"q": "a"}\n', "eval.jsonl:1: an eval example needs 'a'"),
        ("\n", "holds no example"),
    ],
)
def test_bad_rows(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "eval.jsonl"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        read_jsonl(path, required=("q", "a"))


def test_custom_validity(tmp_path: Path) -> None:
    path = tmp_path / "eval.jsonl"
    path.write_text('{"q": 3}\n')
    with pytest.raises(ConfigError, match="needs 'q'"):
        read_jsonl(path, required=("q",), valid=lambda v: isinstance(v, str), what="problem")
