"""The shared task helpers: the ReAct chat, expert episodes, BM25, the kit files and copies."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from autorl_task_common import KIT_MODULES, copy_into_kit, kit_sources
from autorl_task_common.bm25 import BM25Ranking
from autorl_task_common.react import bracket_action, check_turns, play_expert, react_messages


def test_react_messages_shorten_old_observations() -> None:
    messages = react_messages(
        lambda first: f"RULES\n{first}",
        ["o0", "o1 long", "o2 long"],
        ["a1", "a2"],
        1,
        short=lambda o: o.split()[0],
        shown=str.upper,
    )
    assert messages == [
        {"role": "user", "content": "RULES\no0"},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Observation:\no1\nAction:"},
        {"role": "assistant", "content": "A2"},
        {"role": "user", "content": "Observation:\no2 long\nAction:"},
    ]
    with pytest.raises(ValueError, match="one more observation than actions, got 2"):
        check_turns(["o0", "o1"], ["a1", "a2"])


def test_bracket_action_takes_the_first_and_normalises() -> None:
    pattern = re.compile(r"(search|click)\s*\[([^\]\n]*)\]", re.IGNORECASE)
    assert bracket_action(pattern, "Action: SEARCH [ red   shoes ] then click[x]") == (
        "search[red shoes]"
    )
    assert bracket_action(pattern, "no action here") is None


class _Corridor:
    """Walk right ``length`` times to succeed; any other action is a wasted step."""

    def __init__(self, length: int) -> None:
        self.length, self.position = length, 0

    def reset(self, session_id: str) -> tuple[str, dict[str, Any]]:
        self.position = 0
        return f"{session_id}: at 0", {"hint": "right"}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        self.position += action == "right"
        done = self.position == self.length
        return f"at {self.position}", float(done), done, {"success": done, "hint": "right"}


def _build(observations, actions, window) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{window}:{'|'.join(observations)}"}]


def test_play_expert_from_a_sequence_or_from_info() -> None:
    episode = play_expert(_Corridor(2), "s1", ["right", "right", "never"], _build, 3)
    assert (episode["session_id"], episode["reward"], episode["success"]) == ("s1", 1.0, True)
    assert [s["action"] for s in episode["steps"]] == ["right", "right"]  # stops when done
    assert episode["steps"][1]["messages"] == [{"role": "user", "content": "3:s1: at 0|at 1"}]
    by_info = play_expert(_Corridor(2), "s2", lambda info: info["hint"], _build, 3)
    assert by_info["success"] and len(by_info["steps"]) == 2
    short = play_expert(_Corridor(3), "s3", ["right"], _build, 3)  # the expert stops first
    assert (short["reward"], short["success"], len(short["steps"])) == (0.0, False, 1)


def test_bm25_ranks_best_first_with_ties_in_document_order() -> None:
    pytest.importorskip("rank_bm25")
    filler = [[word] for word in ("green", "kettle", "lamp", "desk", "rope")]
    documents = [["red", "shoe"], [], ["blue", "boot"], ["red", "hat"], ["red", "shoe"], *filler]
    ranking = BM25Ranking(documents, "test")
    assert ranking.top(["red", "shoe"], 3) == [0, 4, 3]
    assert ranking.top(["red", "shoe"], 10)[:2] == [0, 4]
    assert ranking.top([], 5) == [] and ranking.top(["red"], 0) == []
    assert ranking.top(["purple"], 5) == []  # no positive score, no hit


def test_the_kit_copy_stands_alone(tmp_path: Path) -> None:
    kit = tmp_path / "kit"
    copied = copy_into_kit(kit)
    assert sorted(p.name for p in copied.iterdir()) == sorted(KIT_MODULES)
    assert [p.read_bytes() for p in sorted(copied.iterdir())] == [
        p.read_bytes() for p in sorted(kit_sources())
    ]
    # -S: no site-packages, so neither autorl nor rank_bm25 can be imported, as in a bare sandbox
    script = """
import os, sys
sys.path.insert(0, "kit")
import autorl_task_common.kitio
import autorl_task_common.react as react
assert os.path.abspath(react.__file__).startswith(os.path.abspath("kit")), react.__file__
from autorl_task_common.bm25 import BM25Ranking
try:
    BM25Ranking([["a"]], "the test kit")
except ImportError as exc:
    print(exc)
"""
    result = subprocess.run(
        [sys.executable, "-S", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "the test kit needs the rank_bm25 package" in result.stdout


def test_kitio_reads_the_train_split_and_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autorl_task_common import kitio

    monkeypatch.setenv("AUTORL_WORKSPACE", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"data/train\.jsonl"):
        kitio.load_train()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n')
    assert kitio.load_train() == [{"a": 1}, {"a": 2}]
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\n{oops\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2"):
        kitio.read_jsonl(tmp_path / "bad.jsonl")
    assert kitio.completion_text([{"role": "assistant", "content": "x"}, "junk"]) == "x"
    assert kitio.kit_config(tmp_path / "autorl_kit.py") is None
    (tmp_path / "config.json").write_text('{"protocol": "reference"}')
    assert kitio.kit_config(tmp_path / "autorl_kit.py") == {"protocol": "reference"}


def test_module_kit_ships_the_module_its_helpers_and_its_config(tmp_path: Path) -> None:
    from autorl_task_common.kits import KIT_NAME, module_kit

    source = tmp_path / "kit.py"
    source.write_text("from autorl_task_common.kitio import read_jsonl\n")
    plain = module_kit(tmp_path / "cache", source)
    configured = module_kit(tmp_path / "cache", source, {"protocol": "reference"})
    assert plain != configured and module_kit(tmp_path / "cache", source) == plain
    assert sorted(p.name for p in plain.iterdir()) == [KIT_NAME, "autorl_task_common"]
    assert (configured / "config.json").read_text().count("reference") == 1
    assert (plain / KIT_NAME).read_bytes() == source.read_bytes()


def test_a_protocol_variant_inherits_what_it_does_not_redefine() -> None:
    import types

    from autorl_task_common.interactive import inherit_protocol

    base = types.ModuleType("base")
    base.__all__ = ["STOP", "build_messages", "make_env"]
    base.STOP, base.build_messages, base.make_env = (), "base prompt", "base env"
    namespace: dict[str, Any] = {}
    inherit_protocol(base, namespace, "extra")
    namespace["build_messages"] = "variant prompt"
    assert namespace["make_env"] == "base env" and namespace["build_messages"] == "variant prompt"
    assert namespace["__all__"] == ["STOP", "build_messages", "make_env", "extra"]
