"""``rounds.run_rounds``, the loop every recipe shares: the budget clock, the phases, saving,
submitting and reading the scores, against the real grading API (``LiveGrader``: real HTTP, a
deterministic score) with the tiny model and stand-in phase functions."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest


def recipe_workspace(grader: Any, model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The live grader's workspace with ``models/base``, and the recipe's environment set."""
    ws = grader.workspace
    (ws / "models").mkdir()
    (ws / "models" / "base").symlink_to(model_dir, target_is_directory=True)
    monkeypatch.setenv("AUTORL_WORKSPACE", str(ws))
    monkeypatch.setenv("AUTORL_GRADER_URL", grader.url)
    monkeypatch.setenv("AUTORL_TOKEN", grader.token)
    return Path(ws)


def test_run_rounds_times_saves_submits_and_reports(
    common_helpers: Path,
    tiny_model_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import rounds
    import torch
    from autorl_testing.grading import LiveGrader

    grader = LiveGrader(tmp_path, wall_seconds=600, max_submissions=2)
    try:
        ws = recipe_workspace(grader, tiny_model_dir, monkeypatch)
        seen: list[tuple[str, int, int, float]] = []

        def phase(name: str, steps: int) -> rounds.Phase:
            def train(run: rounds.Run, seconds: float) -> tuple[object, int]:
                seen.append((name, run.index, run.seed, seconds))
                with torch.no_grad():  # new weights: a new checkpoint, not a duplicate
                    next(run.model.parameters()).add_(0.01)
                return run.model, steps

            return train

        args = rounds.recipe_parser("test").parse_args(["--seed", "5"])
        train = {"a": phase("a", 2), "idle": phase("idle", 0), "b": phase("b", 1)}
        status = rounds.run_rounds(
            args, ["a", "idle", "b", "a"], train, checkpoint="v{version}-{phase}"
        )
    finally:
        grader.close()
    assert status == 0
    # the 4th phase never runs: two submissions, both used
    assert [(n, i, s) for n, i, s, _ in seen] == [("a", 0, 5), ("idle", 1, 6), ("b", 2, 7)]
    # even shares of the time left: the first phase gets about a quarter of it
    margin = max(8.0, 0.08 * 600)
    assert seen[0][3] == pytest.approx((600 - margin) / 4, abs=15)
    assert seen[1][3] == pytest.approx((600 - margin) / 3, abs=15)
    assert sorted(p.name for p in (ws / "output").iterdir() if p.name.startswith("v")) == [
        "v1-a",
        "v2-b",
    ]
    out = capsys.readouterr().out
    assert "phase 1/4: a for up to" in out and "idle: 0 steps" in out
    assert "submitted output/v1-a" in out and "submitted output/v2-b" in out
    assert "no submissions left: stopping" in out
    assert "done: best submission 2 with score 22.0" in out  # LiveGrader: 20 + id


def test_phase_seconds_caps_each_phase_and_the_run_ends_with_its_phases(
    common_helpers: Path,
    tiny_model_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--phase-seconds``: a fixed amount of training under a generous budget (what a test or
    a smoke run on a slow machine asks for); a cap below ``min_seconds`` still runs the phase."""
    import rounds
    import torch
    from autorl_testing.grading import LiveGrader

    grader = LiveGrader(tmp_path, wall_seconds=600, max_submissions=3)
    try:
        ws = recipe_workspace(grader, tiny_model_dir, monkeypatch)
        seen: list[float] = []

        def train(run: rounds.Run, seconds: float) -> tuple[object, int]:
            seen.append(seconds)
            with torch.no_grad():
                next(run.model.parameters()).add_(0.01)
            return run.model, 1

        for cap, expected in (("7", 7.0), ("1", 3.0)):
            args = rounds.recipe_parser("test").parse_args(["--phase-seconds", cap])
            seen.clear()
            assert rounds.run_rounds(args, ["a"], {"a": train}, checkpoint=f"c{cap}") == 0
            assert seen == [expected]  # min_seconds (3) is the floor of a cap
    finally:
        grader.close()
    assert (ws / "output" / "c7").is_dir() and (ws / "output" / "c1").is_dir()


def test_shares_keep_the_save_reserve(common_helpers: Path) -> None:
    import interactive
    import rounds

    clock = SimpleNamespace(left=lambda: 100.0)
    run = SimpleNamespace(
        clock=clock, save_reserve=10.0, phases=["sft", "grpo"], index=0, args=None
    )
    run.phases_left = lambda: len(run.phases) - run.index
    assert rounds.even_share(run, "sft") == pytest.approx(45.0)  # (100 - 10) / 2
    assert rounds.reserve_each_save(run, "sft") == pytest.approx(40.0)  # (100 - 2 x 10) / 2
    run.args = SimpleNamespace(sft_share=0.8)
    assert interactive.sft_first_share(run, "sft") == pytest.approx(64.0)  # (100 - 20) x 0.8
    run.index = 1
    assert interactive.sft_first_share(run, "grpo") == pytest.approx(90.0)
    run.phases, run.index = ["sft"], 0
    assert interactive.sft_first_share(run, "sft") == pytest.approx(90.0)  # no GRPO to follow


def test_recipe_parser_has_the_shared_flags(
    common_helpers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rounds

    monkeypatch.setenv("AUTORL_SEED", "3")
    monkeypatch.setenv("RECIPE_MODE", "full")
    args = rounds.recipe_parser("t", margin=0.06).parse_args([])
    shared = {"mode": "full", "lora_r": 16, "margin": 0.06, "min_margin": 8.0, "seed": 3}
    assert vars(args) == {**shared, "deepspeed": None, "processes": None, "phase_seconds": None}
    monkeypatch.setenv("RECIPE_DEEPSPEED", "zero3")
    args = rounds.recipe_parser("t").parse_args(["--processes", "2"])
    assert (args.deepspeed, args.processes) == ("zero3", 2)


def test_sft_in_rotation_starts_where_the_last_phase_stopped(
    common_helpers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import training

    calls: list[dict] = []

    def fake_sft(model: object, tokenizer: object, rows: list, **kw: object) -> tuple:
        calls.append({"first": rows[0], **kw})
        return model, 3  # 3 steps of 4 rows

    monkeypatch.setattr(training, "run_sft", fake_sft)
    phase = training.sft_in_rotation(list(range(10)), batch_size=4, lr=1e-3)
    run = SimpleNamespace(model="m", tokenizer="t", scratch="s", seed=7, step_times="times")
    assert phase(run, 5.0) == ("m", 3)
    phase(run, 5.0)
    untimed = training.sft_in_rotation([0, 1], timed=False)
    untimed(run, 1.0)
    assert [c["first"] for c in calls] == [0, 2, 0]  # 12 rows trained: the next phase at 12 % 10
    assert calls[0]["seed"] == 7 and calls[0]["lr"] == 1e-3 and calls[0]["seconds"] == 5.0
    assert calls[0]["step_times"] == "times" and calls[2]["step_times"] is None
    assert calls[2]["batch_size"] == 4  # run_sft's default, made explicit
