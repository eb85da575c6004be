"""The benchmark scripts run end to end on the tiny model (small sizes): what `make bench` and
the numbers in the docs rely on keeps working."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import autorl_evaluator_rollout  # noqa: F401
import autorl_task_webshop  # noqa: F401
import pytest
from autorl_testing.runs import run_cache

pytestmark = pytest.mark.e2e  # the benchmarks, each on real models and tasks

REPO = Path(__file__).resolve().parents[1]


def run_bench(script: str, *args: str, cache: Path, status: int = 0) -> tuple[str, str]:
    """``bench/<script> *args`` with its cache in ``cache``; its output, once it exited with
    ``status`` (2: a refusal, which must be a message, not a traceback)."""
    env = {**os.environ, "AUTORL_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == status, done.stdout[-2000:] + done.stderr[-2000:]
    assert status == 0 or "Traceback" not in done.stderr, done.stderr[-2000:]
    return done.stdout, done.stderr


def bench(script: str, *args: str, cache: Path) -> tuple[str, dict]:
    out = cache / f"{script}.json"
    stdout, _ = run_bench(script, *args, "--json", str(out), cache=cache)
    return stdout, json.loads(out.read_text())


def test_rollout_throughput_compares_lockstep_with_one_at_a_time(tmp_path: Path) -> None:
    args = ("--model", "tiny", "--sessions", "4", "--max-steps", "3", "--batch-size", "4")
    stdout, summary = bench("rollout_throughput.py", *args, cache=tmp_path)
    assert "lockstep vs plain:" in stdout
    assert summary["speedup_vs_plain"] > 0
    for mode in ("plain", "one-at-a-time"):  # greedy: the same episodes
        assert summary[f"same_actions_as_{mode}"] is True
    line = summary["roofline"]
    assert "% of the limit" in stdout
    assert line["matmul_gflops"] > 0 and 0 < line["roofline_fraction"] < 1.5
    assert line["prompt_tokens_computed"] > 0 and line["prompt_tokens_reused"] > 0


def test_rollout_throughput_on_alfworld(tmp_path: Path) -> None:
    args = ("--task", "alfworld", "--model", "tiny", "--sessions", "2", "--max-steps", "2")
    stdout, summary = bench(
        "rollout_throughput.py", *args, "--modes", "lockstep,plain", cache=tmp_path
    )
    assert "2 alfworld eval sessions" in stdout and "lockstep vs plain:" in stdout
    assert summary["task"] == "alfworld" and set(summary["modes"]) == {"lockstep", "plain"}
    assert summary["same_actions_as_plain"] is True and summary["speedup_vs_plain"] > 0


def test_action_sft_step_times_both_ways(tmp_path: Path) -> None:
    args = ("--model", "tiny", "--batches", "2", "--batch-size", "2")
    stdout, summary = bench("action_sft_step.py", *args, cache=tmp_path)
    assert "faster a step" in stdout
    assert summary["full backprop"] > 0 and summary["prompt without gradient"] > 0


def test_grpo_step_times_the_recipe_against_trl(tmp_path: Path) -> None:
    args = ("--model", "tiny", "--sessions", "1", "--group", "2", "--steps", "1")
    stdout, summary = bench("grpo_step.py", *args, "--max-new-tokens", "6", cache=tmp_path)
    assert "recipe vs TRL GRPOTrainer" in stdout
    assert summary["recipe, one turn"] > 0 and summary["TRL GRPOTrainer"] > 0
    assert summary["recipe, whole episodes"] > 0 and summary["ratio"] > 0


def test_eval_noise_scores_one_checkpoint_under_other_orders(tmp_path: Path) -> None:
    args = ("tiny", "--orders", "2", "--samples", "1", "--option", "eval_size=4")
    stdout, summary = bench("eval_noise.py", *args, cache=tmp_path)
    assert "binomial SE" in stdout
    assert [r["kind"] for r in summary["runs"]] == ["order", "order", "sampled"]
    assert summary["order"]["spread"] == 0  # greedy: another order plays the same episodes


def test_a_model_the_registry_lacks_is_a_clear_error(tmp_path: Path) -> None:
    _, stderr = run_bench("eval_noise.py", "no-such-model", cache=tmp_path, status=2)
    assert "no-such-model" in stderr


def test_sandbox_overhead_times_start_up_per_sandbox(tmp_path: Path) -> None:
    args = ("--sandboxes", "local,isolated", "--starts", "1", "--no-runs")
    stdout, summary = bench("sandbox_overhead.py", *args, cache=tmp_path)
    assert "x local" in stdout
    rows = summary["sandboxes"]
    assert rows["local"]["start_s"] > 0 and rows["isolated"]["start_s"] > 0
    assert rows["isolated"]["start_ratio"] > 0


def test_vllm_bench_says_plainly_when_it_cannot_run(tmp_path: Path) -> None:
    """Without a CUDA GPU and vLLM the GPU bench exits 2 with one line, no traceback; on a GPU
    machine ``tests/test_cuda.py`` territory (it prints its ratios)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the bench runs for real (make bench)")
    stdout, _ = run_bench("vllm_eval.py", "--model", "tiny", cache=tmp_path, status=2)
    assert "needs a CUDA GPU and vllm" in stdout


def test_grader_edge_compares_intake_and_evaluation_before_and_after(tmp_path: Path) -> None:
    stdout, summary = bench(
        "grader_edge.py", "--model", "tiny", "--repeats", "2", "--prompts", "4", cache=tmp_path
    )
    assert "intake: before" in stdout and "evaluation: before" in stdout
    assert summary["outputs_identical"] == summary["prompts"] == 4  # greedy, same weights
    assert summary["intake_ratio"] > 0 and summary["eval_ratio"] > 0
    assert 0 < summary["base_distance"] < 0.1


def test_selection_gap_simulates_the_issue_and_measures_a_kept_run(tmp_path: Path) -> None:
    """The simulation reproduces the issue's numbers (n = 40, p = 0.5: +4.4 at k = 2 ... +13.9
    at k = 16, within rounding of its normal approximation); a kept tiny gsm8k run's scored
    checkpoints are scored on its sealed split."""
    cache = run_cache(tmp_path)
    env = {**os.environ, "AUTORL_CACHE": str(cache)}
    run = subprocess.run(
        [
            str(Path(sys.executable).parent / "autorl"), "run", "--task", "gsm8k",
            "--model", "tiny", "--budget", "60", "--keep-checkpoints", "--quiet",
            "--agent-option", "phase_seconds=4",  # its checkpoints, not their training, matter
            "--task-option", "train_size=20", "--task-option", "eval_size=16",
            "--runs-dir", str(tmp_path / "runs"), "--run-id", "kept",
        ],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    stdout, summary = bench("selection_gap.py", str(tmp_path / "runs" / "kept"), cache=cache)
    at40 = summary["simulation"]["40"]["0.5"]
    assert [round(at40[k]) for k in ("2", "4", "8", "16")] == [4, 8, 11, 14]
    assert "selection gap" in stdout
    measured = summary["measured"][0]
    assert measured["task"] == "gsm8k" and measured["checkpoints"]
    assert all(row["test_n"] == 8 and row["dev_n"] == 8 for row in measured["checkpoints"])
    best = max(measured["checkpoints"], key=lambda r: (r["dev"], r["submission_id"]))
    assert measured["selection_gap"] == round(best["dev"] - best["test"], 2)
