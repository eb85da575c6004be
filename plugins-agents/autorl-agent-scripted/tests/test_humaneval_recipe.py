"""The scripted agent's HumanEval recipe: data format, expert-iteration filter, a tiny-model run.

Plus the shared planning helpers of ``recipe_common`` (warm-up, step shape) that keep short
phases from training at lr 0 or blowing their time share.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from autorl_testing.runs import run_cache

AUTORL = str(Path(sys.executable).parent / "autorl")
OTHER_BODY_0 = """    for i in range(len(numbers)):
        for j in range(i + 1, len(numbers)):
            if abs(numbers[i] - numbers[j]) < threshold:
                return True
    return False
"""
"""A correct body for HumanEval/0 (has_close_elements) that differs from the canonical one."""


@pytest.fixture
def workspace(humaneval_workspace: Path) -> Path:
    """A HumanEval workspace as the harness builds it; the recipe modules importable."""
    return humaneval_workspace


# data format -------------------------------------------------------------------------------------


def test_sft_text_is_the_evaluator_prompt_plus_the_solution(workspace: Path) -> None:
    import autorl_kit as kit
    import recipe
    from autorl_task_humaneval.kit import build_prompt  # what the grader imports

    problems = kit.load_train()
    assert len(problems) == 82
    for problem in problems:
        text = recipe.sft_text(kit, problem)
        assert text == build_prompt(problem) + problem["canonical_solution"]
        # the text is a program that passes the problem's own tests
    assert kit.reward(problems[0]["canonical_solution"], problems[0]) == 1.0


def test_sft_tokens_start_with_exactly_what_the_evaluator_generates_from(workspace: Path) -> None:
    import autorl_kit as kit
    import recipe
    from autorl_hf.generation import encode  # the evaluator's prompt encoding
    from recipe_common import load_base

    _, tokenizer = load_base(workspace / "models" / "base")
    problem = kit.load_train()[3]
    row = recipe.sft_example(kit, tokenizer, problem, problem["canonical_solution"], 4096)
    prompt_ids = encode(tokenizer, kit.build_prompt(problem))
    n = len(prompt_ids)
    assert row["input_ids"][:n] == prompt_ids
    assert row["completion_mask"] == [0] * n + [1] * (len(row["input_ids"]) - n)
    assert row["input_ids"][-1] == tokenizer.eos_token_id  # the model learns to stop
    body = tokenizer.decode(row["input_ids"][n:-1])
    assert body == problem["canonical_solution"]


def test_sft_rows_are_cut_to_max_length_and_keep_only_rows_with_a_solution(
    workspace: Path,
) -> None:
    import autorl_kit as kit
    import recipe
    from recipe_common import load_base

    _, tokenizer = load_base(workspace / "models" / "base")
    problems = kit.load_train()[:5]
    prompt_lengths = [len(tokenizer(kit.build_prompt(p))["input_ids"]) for p in problems]
    limit = sorted(prompt_lengths)[2] + 1  # some prompts fit with one solution token, some not
    rows = recipe.sft_rows(kit, tokenizer, recipe.canonical_pairs(problems), limit)
    assert rows and len(rows) < len(problems)
    assert all(len(r["input_ids"]) <= limit and any(r["completion_mask"]) for r in rows)


def test_expert_iteration_keeps_only_new_bodies_that_pass(workspace: Path) -> None:
    import autorl_kit as kit
    import recipe

    problem = kit.load_train()[0]
    assert problem["task_id"] == "HumanEval/0"
    samples = [
        [
            problem["canonical_solution"],  # not new
            OTHER_BODY_0 + "\nprint('after the body')\n",  # passes once cut at a stop sequence
            OTHER_BODY_0,  # the same body again: kept once
            "    return True\n",  # wrong
            "",
        ]
    ]
    kept = recipe.passing_pairs(kit, [problem], samples)
    assert kept == [(problem, OTHER_BODY_0)]


def test_sampling_gives_n_continuations_and_stops_at_the_deadline(workspace: Path) -> None:
    import autorl_kit as kit
    import recipe
    from recipe_common import load_base

    model, tokenizer = load_base(workspace / "models" / "base")
    prompts = [kit.build_prompt(p) for p in kit.load_train()[:3]]
    common = dict(stop=tuple(kit.STOP_SEQUENCES), temperature=1.0, max_new_tokens=8, batch_size=4)
    out = recipe.sample_completions(
        model, tokenizer, prompts, n=2, deadline=time.monotonic() + 60, **common
    )
    assert [len(s) for s in out] == [2, 2, 2]
    assert all(isinstance(t, str) for s in out for t in s)
    late = recipe.sample_completions(
        model, tokenizer, prompts, n=2, deadline=time.monotonic() - 1, **common
    )
    assert late == [[], [], []]


def test_reference_prompt_rows_start_with_the_graded_chat_prompt(
    humaneval_reference_workspace: Path,
) -> None:
    """With ``prompt = "reference"`` the recipe trains on the grader's chat prompt (token ids as
    the evaluator encodes them) followed by a passing reply (the function in a code block), and
    samples from the chat-templated text with no stop strings."""
    import autorl_kit as kit
    import recipe
    from autorl_hf.generation import encode  # the evaluator's prompt encoding
    from autorl_task_humaneval.kit import REFERENCE  # what the grader imports
    from recipe_common import load_base

    model, tokenizer = load_base(humaneval_reference_workspace / "models" / "base")
    problems = kit.load_train()[:3]
    problem = problems[2]
    (_, reply), *_ = recipe.canonical_pairs([problem], kit)
    assert reply == REFERENCE.answer_text(problem, problem["canonical_solution"])
    assert kit.reward(reply, problem) == 1.0
    row = recipe.sft_example(kit, tokenizer, problem, reply, 4096)
    prompt_ids = encode(tokenizer, REFERENCE.build_prompt(problem))
    n = len(prompt_ids)
    assert row["input_ids"][:n] == prompt_ids and row["input_ids"][-1] == tokenizer.eos_token_id
    assert tokenizer.decode(row["input_ids"][n:-1]) == reply
    texts = recipe.prompt_texts(kit, tokenizer, problems)
    assert tokenizer(texts[0], add_special_tokens=False)["input_ids"] == encode(
        tokenizer, REFERENCE.build_prompt(problems[0])
    )
    out = recipe.sample_completions(
        model,
        tokenizer,
        texts,
        stop=tuple(kit.STOP_SEQUENCES),
        n=1,
        temperature=1.0,
        max_new_tokens=4,
        batch_size=4,
        deadline=time.monotonic() + 60,
        add_special_tokens=False,
    )
    assert [len(s) for s in out] == [1, 1, 1]
    assert recipe.passing_pairs(kit, [problem], [[reply, "```python\nx = (\n```"]]) == []


def test_recipe_flags_parse(workspace: Path) -> None:
    import recipe

    args = recipe.parse_args(["--mode", "full", "--ei-rounds", "0", "--sft-epochs", "1"])
    assert (args.mode, args.ei_rounds, args.sft_epochs) == ("full", 0, 1.0)


# shared planning helpers -----------------------------------------------------------------------


def test_warmup_is_proportional_and_absent_in_short_phases(workspace: Path) -> None:
    from recipe_common import phase_warmup, planned_steps, warmup_steps

    assert warmup_steps(1) == warmup_steps(2) == warmup_steps(19) == 0
    assert warmup_steps(20) == 2
    assert warmup_steps(1000) == 5
    # a phase capped at 1868 steps that has 30 s at 1.5 s per step expects 20 steps, not 1868
    assert planned_steps(1868, 30.0, 1.5) == 20
    assert planned_steps(1868, 3.0, 1.5) == 2 and warmup_steps(planned_steps(1868, 3.0, 1.5)) == 0
    assert planned_steps(40, 30.0, None) == 40  # not measured yet: the cap
    # the warm-up a phase gets: none before a step was timed (it might get only one step)
    assert phase_warmup(1868, 30.0, None) == 0
    assert phase_warmup(1868, 300.0, 1.5) == 5
    assert phase_warmup(1868, 20.0, 1.5) == 0


def test_an_rl_step_that_would_blow_the_share_is_shrunk(workspace: Path) -> None:
    from recipe_common import fit_generation_shape

    # fits already: unchanged
    assert fit_generation_shape(100.0, 10.0, 2, 4, 160) == (2, 4, 160)
    # 40 s per step, 30 s share, 2 steps wanted: new tokens go first (160 -> 40 = 10 s a step)
    assert fit_generation_shape(30.0, 40.0, 2, 4, 160) == (2, 4, 40)
    # then prompts, then generations, never below 1 prompt x 2 generations x 32 tokens
    assert fit_generation_shape(1.0, 40.0, 2, 4, 160) == (1, 2, 40)


@pytest.mark.e2e  # trains the tiny model
def test_sft_phase_with_one_step_changes_the_weights(workspace: Path) -> None:
    """The regression behind proportional warm-up: 1 step must not run at lr 0."""
    import autorl_kit as kit
    import recipe
    import training
    from recipe_common import load_base

    model, tokenizer = load_base(workspace / "models" / "base")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rows = recipe.sft_rows(kit, tokenizer, recipe.canonical_pairs(kit.load_train()), 256)
    trained, steps = training.run_sft(
        model,
        tokenizer,
        rows,
        mode="lora",
        seconds=0.0,  # deadline already passed: exactly one step
        scratch=workspace / "output" / ".trainer",
        batch_size=4,
        epochs=3.0,  # a 60-step cap: the old fixed warm-up would have started at lr 0
        max_length=None,  # pre-tokenized rows, as the recipe passes them
    )
    assert steps == 1
    after = trained.state_dict()
    assert any(not after[k].equal(v) for k, v in before.items() if k in after)


# end to end ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_tiny_humaneval_run_submits_a_scored_checkpoint(tmp_path: Path) -> None:
    """`autorl run --task humaneval --model tiny --agent scripted` through the real CLI."""
    env = {**os.environ, "AUTORL_CACHE": str(run_cache(tmp_path)), "HF_HUB_OFFLINE": "1"}
    argv = [AUTORL, "run", "--task", "humaneval", "--model", "tiny", "--agent", "scripted"]
    # one submission: the recipe plans one SFT phase, and the grader evaluates only it, on the
    # first 20 of the 82 eval problems (the baseline's evaluation of all 82 took 54 s of the
    # test's 157; with 20 the test took 93 s)
    argv += ["--runs-dir", str(tmp_path / "runs"), "--run-id", "he"]
    argv += ["--budget", "240", "--max-submissions", "1", "--evaluator-option", "limit=20"]
    # 128 new tokens, not 384: the grader's generation was 75 % of the test's CPU (86 CPU-s)
    argv += ["--evaluator-option", "max_new_tokens=128"]
    argv += ["--agent-option", "phase_seconds=15"]  # the budget is a guard: a busy host trains
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run_dir = tmp_path / "runs" / "he"
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["baseline_score"] is not None
    scored = [row for row in summary["submissions"] if row["status"] == "scored"]
    assert scored, summary["submissions"]
    log = (run_dir / "agent.log").read_text()
    assert "phase 1/1: sft" in log and "submitted output/v1" in log
    assert (run_dir / "workspace" / "output" / "v1" / "config.json").is_file()
