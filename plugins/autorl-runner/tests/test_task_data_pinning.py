"""Task data cannot change under a run: the task cache is keyed by seed and options, and the run
grades from its own pinned copy of the splits (issue 30, attack 10)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from autorl_runner import setup as setup_mod
from autorl_runner.setup import PINNED_DIR, pin_splits, split_digest

from autorl.errors import AutorlError, ConfigError
from autorl.paths import task_cache_dir, task_cache_key
from autorl.types import PreparedTask, TaskContext

WORDS = [
    "apple",
    "bread",
    "chair",
    "dance",
    "eagle",
    "flame",
    "grape",
    "house",
    "input",
    "joker",
    "kites",
    "lemon",
    "mango",
]


class ReverseTask:
    """The task of docs/writing-plugins.md: the seed shuffles which words are held out."""

    name = "reverse"
    version = "1"

    def prepare(self, ctx: TaskContext) -> PreparedTask:
        rows = [{"question": f"Reverse: {w}", "answer": w[::-1]} for w in WORDS]
        random.Random(ctx.seed).shuffle(rows)
        size = int(ctx.options.get("eval_size", 4))
        ctx.cache_dir.mkdir(parents=True, exist_ok=True)
        train, eval_path = ctx.cache_dir / "train.jsonl", ctx.cache_dir / "eval.jsonl"
        for path, part in ((train, rows[size:]), (eval_path, rows[:size])):
            path.write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
        return PreparedTask(
            train_files=(train,), eval_path=eval_path, description="Reverse.", evaluator="exact"
        )


def _prepare(root: Path, seed: int, options: dict | None = None) -> PreparedTask:
    options = options or {}
    cache = task_cache_dir("reverse", "1", seed, options, root=root)
    return ReverseTask().prepare(TaskContext(cache_dir=cache, seed=seed, options=options))


def test_cache_key_is_stable_and_covers_seed_and_options(tmp_path: Path) -> None:
    assert task_cache_key(0, {"a": 1, "b": 2}) == task_cache_key(0, {"b": 2, "a": 1})
    keys = {task_cache_key(0, {}), task_cache_key(1, {}), task_cache_key(0, {"eval_size": 2})}
    assert len(keys) == 3
    path = task_cache_dir("reverse", "1", 3, {"eval_size": 2}, root=tmp_path)
    assert path.is_dir()
    assert path.relative_to(tmp_path).parts[:3] == ("tasks", "reverse", "1")
    assert path.name.startswith("s3-")


def test_preparing_another_seed_never_changes_a_running_runs_split(tmp_path: Path) -> None:
    cache, run_dir = tmp_path / "cache", tmp_path / "runs" / "run0"
    run_dir.mkdir(parents=True)
    seed0 = _prepare(cache, 0)
    pinned = pin_splits(seed0, run_dir, "reverse")
    assert pinned.eval_path == run_dir / PINNED_DIR / "eval" / "eval.jsonl"
    assert pinned.train_files == (run_dir / PINNED_DIR / "train" / "train.jsonl",)
    assert not pinned.eval_path.is_relative_to(run_dir / "workspace")
    held_out, digest = pinned.eval_path.read_bytes(), split_digest(pinned.eval_path)
    assert digest == split_digest(seed0.eval_path)  # same bytes, same hash: baselines still hit

    seed1 = _prepare(cache, 1)  # the attack: the next seed prepared while run0 is graded
    other = _prepare(cache, 0, {"eval_size": 2})
    assert seed1.eval_path.parent != seed0.eval_path.parent != other.eval_path.parent
    assert seed0.eval_path.read_bytes() == held_out, "another seed rewrote the shared cache"
    assert pinned.eval_path.read_bytes() == held_out
    assert split_digest(pinned.eval_path) == digest


def test_the_pinned_copy_survives_a_task_that_ignores_the_key(tmp_path: Path) -> None:
    """A task that writes to a fixed place (ctx.cache_dir.parent) still cannot reach the run."""
    fixed = tmp_path / "fixed"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    first = ReverseTask().prepare(TaskContext(cache_dir=fixed, seed=0))
    pinned = pin_splits(first, run_dir, "reverse")
    before = (pinned.eval_path.read_bytes(), split_digest(pinned.eval_path))
    ReverseTask().prepare(TaskContext(cache_dir=fixed, seed=1))  # overwrites eval.jsonl
    assert first.eval_path.read_bytes() != before[0]
    assert (pinned.eval_path.read_bytes(), split_digest(pinned.eval_path)) == before


def test_a_resumed_run_keeps_its_pinned_copy(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    prepared = _prepare(tmp_path / "cache", 0)
    pinned = pin_splits(prepared, run_dir, "reverse")
    held_out = pinned.eval_path.read_bytes()
    prepared.eval_path.write_text('{"question": "changed", "answer": "x"}\n')
    again = pin_splits(prepared, run_dir, "reverse")  # what `autorl run --resume` does
    assert again.eval_path == pinned.eval_path and again.eval_path.read_bytes() == held_out


def test_a_half_made_copy_is_made_again(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    (run_dir / PINNED_DIR / "eval").mkdir(parents=True)
    (run_dir / PINNED_DIR / "eval" / "eval.jsonl").write_text("partial\n")
    prepared = _prepare(tmp_path / "cache", 0)
    pinned = pin_splits(prepared, run_dir, "reverse")
    assert pinned.eval_path.read_bytes() == prepared.eval_path.read_bytes()
    (run_dir / PINNED_DIR / "pinned.json").write_text("not json")
    with pytest.raises(AutorlError, match="pinned task data"):
        pin_splits(prepared, run_dir, "reverse")


def test_eval_files_next_to_the_split_and_split_directories_are_pinned(tmp_path: Path) -> None:
    """Tasks refer to files beside the eval split (alfworld's games): the directory is copied."""
    split = tmp_path / "cache" / "split"
    (split / "games" / "g1").mkdir(parents=True)
    (split / "games" / "g1" / "game.tw-pddl").write_text("game one\n")
    (split / "eval.jsonl").write_text('{"game_file": "games/g1/game.tw-pddl"}\n')
    (split / "train.jsonl").write_text("{}\n")
    (split / "evaldir").mkdir()
    (split / "evaldir" / "part-0.jsonl").write_text("{}\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    prepared = PreparedTask((split / "train.jsonl",), split / "eval.jsonl", "d", "exact")
    pinned = pin_splits(prepared, run_dir, "t")
    assert (pinned.eval_path.parent / "games" / "g1" / "game.tw-pddl").read_text() == "game one\n"
    (tmp_path / "run2").mkdir()
    as_dir = pin_splits(
        PreparedTask((split / "train.jsonl",), split / "evaldir", "d", "exact"),
        tmp_path / "run2",
        "t",
    )
    assert as_dir.eval_path.is_dir()
    assert split_digest(as_dir.eval_path) == split_digest(split / "evaldir")


def test_an_eval_directory_too_large_to_copy_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(setup_mod, "MAX_PINNED_BYTES", 10)
    prepared = _prepare(tmp_path / "cache", 0)
    with pytest.raises(ConfigError, match="directory of its eval split") as info:
        pin_splits(prepared, tmp_path, "reverse")
    assert "ctx.cache_dir" in str(info.value.hint)
