"""build_once: a split appears whole or not at all; digests name what went into a build."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_data.cache import build_once, files_digest, params_digest


def test_build_once_builds_then_reuses(tmp_path: Path) -> None:
    calls = []

    def build(staging: Path) -> None:
        calls.append(staging)
        (staging / "train.jsonl").write_text("{}\n")
        (staging / "meta.json").write_text("{}")

    target = tmp_path / "split-abc"
    assert build_once(target, build) == target
    assert build_once(target, build) == target
    assert len(calls) == 1 and (target / "train.jsonl").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["split-abc"]  # no staging left behind


def test_a_failed_build_leaves_nothing(tmp_path: Path) -> None:
    def build(staging: Path) -> None:
        (staging / "train.jsonl").write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        build_once(tmp_path / "split", build)
    assert list(tmp_path.iterdir()) == []


def test_an_incomplete_target_is_rebuilt(tmp_path: Path) -> None:
    target = tmp_path / "split"
    target.mkdir()
    (target / "stale.jsonl").write_text("x")  # no marker: an old crash

    def build(staging: Path) -> None:
        (staging / "meta.json").write_text("{}")

    build_once(target, build)
    assert sorted(p.name for p in target.iterdir()) == ["meta.json"]


def test_digests_change_with_their_inputs(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("1")
    b.write_text("1")
    assert files_digest([a]) != files_digest([b])  # the name counts
    before = files_digest([a])
    a.write_text("2")
    assert files_digest([a]) != before and len(before) == 16
    assert params_digest({"x": 1, "y": [2]}) == params_digest({"y": [2], "x": 1})
    assert params_digest({"x": 1}) != params_digest({"x": 2})
    assert params_digest({"path": tmp_path}) == params_digest({"path": str(tmp_path)})
