"""The gsm8k recipe's data and the shared training phases (``training.run_sft``, ``run_grpo``)
on the tiny model: real TRL SFT/GRPO, real checkpoints."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest


def base_and_weights(workspace: Path) -> tuple[Any, Any, dict[str, Any]]:
    """The workspace's models/base (model, tokenizer) and a copy of its weights before training."""
    from recipe_common import load_base

    model, tokenizer = load_base(workspace / "models" / "base")
    return model, tokenizer, {k: v.clone() for k, v in model.state_dict().items()}


def sft(workspace: Path, **options: Any) -> tuple[Any, Any, int, dict[str, Any]]:
    """``training.run_sft`` from models/base on the recipe's rows of the whole train split,
    scratch under output/: the trained model, its tokenizer, the steps and the base weights."""
    import autorl_kit as kit
    import recipe
    import training

    model, tokenizer, before = base_and_weights(workspace)
    rows = recipe.sft_rows(kit, kit.load_train())
    scratch = workspace / "output" / ".trainer"
    trained, steps = training.run_sft(model, tokenizer, rows, scratch=scratch, **options)
    return trained, tokenizer, steps, before


def changed(model: Any, before: dict[str, Any]) -> list[str]:
    """The weights of ``model`` that differ from ``before``."""
    return [k for k, v in model.state_dict().items() if k in before and not v.equal(before[k])]


def test_sft_rows_use_the_eval_prompt(gsm8k_workspace: Path) -> None:
    import autorl_kit as kit
    import recipe

    rows = kit.load_train()
    sft = recipe.sft_rows(kit, rows[:2])
    assert sft[0]["prompt"] == kit.build_messages(rows[0]["question"])
    assert sft[0]["completion"][0]["content"].endswith(f"#### {rows[0]['answer']}")
    grpo = recipe.grpo_rows(kit, rows[:2])
    assert grpo[1] == {
        "prompt": kit.build_messages(rows[1]["question"]),
        "answer": rows[1]["answer"],
    }


def test_phase_plan_keeps_the_save_reserve(common_helpers: Path) -> None:
    import rounds

    assert rounds.phase_seconds(100.0, 10.0, 3) == pytest.approx(30.0)
    assert rounds.phase_seconds(5.0, 10.0, 1) == 0.0


@pytest.mark.e2e  # trains the tiny model
@pytest.mark.parametrize("mode", ["lora", "full"])
def test_sft_gives_a_loadable_merged_checkpoint(gsm8k_workspace: Path, mode: str) -> None:
    import autorl_kit as kit
    from autorl_hf.generation import generate
    from autorl_hf.loading import load_model
    from recipe_common import save_checkpoint

    trained, tokenizer, steps, before = sft(
        gsm8k_workspace,
        mode=mode,
        seconds=60,
        batch_size=8,
        lr=1e-3,
        epochs=0.4,  # 40 rows * 0.4 / 8 = 2 steps
    )
    assert steps == 2
    target = gsm8k_workspace / "output" / "v1"
    save_checkpoint(trained, tokenizer, target)
    assert not any(p.name.startswith("adapter") for p in target.iterdir()), "LoRA not merged"
    reloaded, reloaded_tok = load_model(target, device="cpu")
    assert changed(reloaded, before), "training changed no weight"
    [text] = generate(
        reloaded, reloaded_tok, [kit.build_messages("What is 2 + 3?")], max_new_tokens=8
    )
    assert isinstance(text, str)


@pytest.mark.e2e  # trains the tiny model
@pytest.mark.parametrize(("stage", "processes", "mode"), [("zero2", 1, "full")])
def test_sft_under_deepspeed_zero_on_the_cpu(
    gsm8k_workspace: Path, stage: str, processes: int, mode: str
) -> None:
    """The recipe's SFT phase under DeepSpeed ZeRO-2 on one rank without a launcher (gloo on
    this CPU): the full model comes back, trained. ZeRO-3 with LoRA on two ranks (each holding
    half of every parameter) runs in a real sandboxed run: tests/test_run_e2e.py. A GPU machine
    runs one rank per GPU (docs/reference.md)."""
    trained, _, steps, before = sft(
        gsm8k_workspace,
        mode=mode,
        seconds=240,
        batch_size=4,
        lr=1e-3,
        max_steps=3,
        deepspeed=stage,
        processes=processes,
    )
    assert steps == 3
    [log] = (gsm8k_workspace / "output" / ".trainer").glob("deepspeed-*/deepspeed.log")
    result = (log.parent / "out" / "deepspeed_result.json").read_text()
    assert f'"world_size": {processes}' in result and f'"stage": {stage[-1]}' in result
    trained_keys = set(trained.state_dict())
    assert changed(trained, before) and trained_keys == set(before), "not a merged, trained model"


@pytest.mark.e2e  # trains the tiny model
@pytest.mark.parametrize(("stage", "processes"), [("zero2", 1), ("zero3", 2)])
def test_grpo_under_deepspeed_on_the_cpu(
    gsm8k_workspace: Path, monkeypatch: pytest.MonkeyPatch, stage: str, processes: int
) -> None:
    """The recipe's GRPO phase under DeepSpeed ZeRO (gloo on this CPU; ZeRO-3 on two ranks
    samples with synced generation, each rank holding half of every parameter): groups
    sampled per prompt, scored by a reward the workers import (as they import the kit's),
    group-normalised advantages, and the merged LoRA model comes back trained."""
    import autorl_kit as kit
    import recipe
    import training

    # a reward that varies within every group (the tiny model never answers right), importable
    # by the workers as the kit's is: the advantages are non-zero, so the weights must move
    (gsm8k_workspace / "kit" / "length_reward.py").write_text(
        "def by_length(completions, **_):\n    return [len(c) % 5 / 4 for c in completions]\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(gsm8k_workspace / "kit"))  # as in a run
    monkeypatch.syspath_prepend(str(gsm8k_workspace / "kit"))
    from length_reward import by_length

    model, tokenizer, before = base_and_weights(gsm8k_workspace)
    scratch = gsm8k_workspace / "output" / ".trainer"
    trained, steps = training.run_grpo(
        model,
        tokenizer,
        recipe.grpo_rows(kit, kit.load_train()[:8]),
        by_length,
        mode="lora",
        seconds=240,
        scratch=scratch,
        max_steps=2,
        prompts_per_step=2,
        generations=3,
        max_new_tokens=12,
        lr=1e-2,
        deepspeed=stage,
        processes=processes,
    )
    assert steps == 2
    [log] = scratch.glob("deepspeed-*/deepspeed.log")
    result = json.loads((log.parent / "out" / "deepspeed_result.json").read_text())
    assert (result["world_size"], result["stage"]) == (processes, int(stage[-1]))
    assert len(result["rewards"]) == 2 and any(loss != 0 for loss in result["losses"])
    trained_keys = set(trained.state_dict())
    assert changed(trained, before) and trained_keys == set(before), "not a merged, trained model"
    with pytest.raises(ValueError, match="module-level function"):
        training.reward_reference(lambda completions, **_: [0.0] * len(completions))


def test_grpo_advantages_are_group_normalised(common_helpers: Path) -> None:
    from recipe_common import group_advantages

    advantages = group_advantages([1.0, 0.0, 0.0, 0.5, 0.5, 0.5], [0, 0, 0, 1, 1, 1])
    assert advantages[0] > 0 > advantages[1] == advantages[2]
    assert advantages[3:] == [0.0, 0.0, 0.0]  # a group scored alike teaches nothing


@pytest.mark.e2e  # trains the tiny model
def test_sft_stops_at_its_deadline(gsm8k_workspace: Path) -> None:
    import autorl_kit as kit
    import recipe
    import training
    from recipe_common import load_base

    model, tokenizer = load_base(gsm8k_workspace / "models" / "base")
    started = time.monotonic()
    _, steps = training.run_sft(
        model,
        tokenizer,
        recipe.sft_rows(kit, kit.load_train() * 20),
        mode="lora",
        seconds=0.0,  # the deadline has passed: one step, then stop
        scratch=gsm8k_workspace / "output" / ".trainer",
        batch_size=4,
    )
    assert steps == 1
    assert time.monotonic() - started < 60


@pytest.mark.slow
def test_grpo_runs_with_the_kit_reward(gsm8k_workspace: Path) -> None:
    import autorl_kit as kit
    import recipe
    import training
    from recipe_common import load_base, save_checkpoint

    model, tokenizer = load_base(gsm8k_workspace / "models" / "base")
    trained, steps = training.run_grpo(
        model,
        tokenizer,
        recipe.grpo_rows(kit, kit.load_train()),
        kit.trl_reward,
        mode="lora",
        seconds=60,
        scratch=gsm8k_workspace / "output" / ".trainer",
        max_steps=1,
        prompts_per_step=2,
        generations=2,
        max_new_tokens=16,
    )
    assert steps == 1
    save_checkpoint(trained, tokenizer, gsm8k_workspace / "output" / "v2")
    assert (gsm8k_workspace / "output" / "v2" / "config.json").is_file()


FAKE_WORKER = """
import json, sys
from pathlib import Path
job = json.loads(Path(sys.argv[1]).read_text())
tries = Path(job["out"]) / "tries"
tries.write_text(str(int(tries.read_text()) + 1) if tries.exists() else "1")
if job["fail"] == "port" and tries.read_text() == "1":
    print("torch.distributed.DistNetworkError: ... code: -98, name: EADDRINUSE")
    sys.exit(1)
if job["fail"] == "other":
    print("RuntimeError: something else")
    sys.exit(1)
(Path(job["out"]) / "deepspeed_result.json").write_text(json.dumps({"steps": 1}))
"""


@pytest.mark.parametrize(("fail", "tries"), [("port", 2), ("other", 1)])
def test_a_rendezvous_port_taken_before_its_bind_is_retried(
    common_helpers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: str, tries: int
) -> None:
    """The port picked free can be taken by another process before the rendezvous binds it (CI:
    EADDRINUSE on a busy host): the launch runs again on a new port; any other failure raises
    at once, with the log's tail."""
    import deepspeed_sft

    (tmp_path / "fake_worker.py").write_text(FAKE_WORKER)
    monkeypatch.setattr(deepspeed_sft, "__file__", str(tmp_path / "deepspeed_sft.py"))
    out = tmp_path / "out"
    out.mkdir()
    job = {"out": str(out), "fail": fail}
    log = tmp_path / "deepspeed.log"
    if fail == "port":
        assert deepspeed_sft.launch(job, 1, log, worker="fake_worker.py") == {"steps": 1}
    else:
        with pytest.raises(RuntimeError, match="something else"):
            deepspeed_sft.launch(job, 1, log, worker="fake_worker.py")
    assert (out / "tries").read_text() == str(tries)
