"""Training phases shared by the recipes: the LoRA config, TRL SFT and GRPO phases.

Copied into ``workspace/code/`` with the other common files. torch, TRL and PEFT are imported
inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from recipe_common import (
    StepTimes,
    device,
    estimate_generation_step_seconds,
    fit_generation_shape,
    log,
    merged,
    phase_warmup,
    planned_steps,
    stop_at_callback,
)


def lora_config(r: int) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )


def trainer_args(scratch: Path, seed: int, gradient_checkpointing: bool = False) -> dict[str, Any]:
    """The TRL trainer settings every phase shares. ``gradient_checkpointing`` is off by default
    (small models: compute, not memory, is the limit); TRL's own default is on."""
    on_gpu = device() == "cuda"
    return {
        "output_dir": str(scratch),
        "save_strategy": "no",
        "report_to": "none",
        "logging_steps": 1,
        "disable_tqdm": True,
        "seed": seed,
        "bf16": on_gpu,
        "use_cpu": not on_gpu,
        "dataloader_num_workers": 0,
        "gradient_checkpointing": gradient_checkpointing,
    }


# phases ----------------------------------------------------------------------------------------


def run_sft(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    *,
    mode: str,
    seconds: float,
    scratch: Path,
    batch_size: int = 4,
    lr: float | None = None,
    epochs: float = 1.0,
    max_steps: int | None = None,
    max_length: int | None = 512,
    lora_r: int = 16,
    seed: int = 0,
    step_times: StepTimes | None = None,
    gradient_checkpointing: bool = False,
    deepspeed: str | None = None,
    processes: int | None = None,
) -> tuple[Any, int]:
    """SFT with TRL's ``SFTTrainer`` (loss on the completion only) until ``seconds`` pass or
    the step cap; returns (merged model, steps run). With ``deepspeed`` (``zero2``/``zero3``)
    the phase runs under DeepSpeed ZeRO on ``processes`` ranks instead
    (:func:`deepspeed_phase`).

    ``rows``: conversational prompt-completion rows, or pre-tokenized ``input_ids`` and
    ``completion_mask`` (pass ``max_length=None`` when they are cut already). The cap is
    ``max_steps``, else ``epochs`` over the rows. LoRA (``mode="lora"``, lr 2e-4) or full
    fine-tuning (lr 2e-5). The warm-up is sized to the steps the phase can run: none when the
    phase is short or no SFT step was timed yet (without ``step_times``: never). Gradient
    checkpointing saves memory at the cost of a recomputed forward pass (same gradients).
    """
    cap = max_steps or max(1, int(len(rows) * epochs / batch_size))
    if deepspeed:
        return deepspeed_phase(
            model,
            tokenizer,
            rows,
            stage=deepspeed,
            processes=processes,
            seconds=seconds,
            scratch=scratch,
            batch_size=batch_size,
            lr=lr or (2e-4 if mode == "lora" else 2e-5),
            max_steps=cap,
            max_length=max_length,
            mode=mode,
            lora_r=lora_r,
            seed=seed,
        )
    from datasets import Dataset
    from datasets.utils.logging import disable_progress_bar
    from trl import SFTConfig, SFTTrainer

    disable_progress_bar()  # per-batch bars would flood the agent log

    tokenizer.padding_side = "right"
    step_s = step_times.get("sft") if step_times else None
    config = SFTConfig(
        **trainer_args(scratch, seed, gradient_checkpointing),
        per_device_train_batch_size=batch_size,
        learning_rate=lr or (2e-4 if mode == "lora" else 2e-5),
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=phase_warmup(cap, seconds, step_s),
        max_steps=cap,
        max_length=max_length,
        completion_only_loss=True,
    )
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora_config(lora_r) if mode == "lora" else None,
        callbacks=[stopper := stop_at_callback(time.monotonic() + seconds, label="sft")],
    )
    expected = planned_steps(cap, seconds, step_s)
    timing = f"{expected} expected at {step_s:.1f}s a step" if step_s else "step time unknown"
    log(
        f"  sft: {len(rows)} examples, up to {cap} steps in {seconds:.0f}s ({timing}), "
        f"warm-up {config.warmup_steps}"
    )
    trainer.train()
    if step_times is not None:
        step_times.record("sft", stopper)
    return merged(trainer.model), trainer.state.global_step


def deepspeed_phase(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    *,
    stage: str,
    processes: int | None,
    seconds: float,
    scratch: Path,
    phase: str = "sft",
    **job: Any,
) -> tuple[Any, int]:
    """One SFT or GRPO phase under DeepSpeed ZeRO (:mod:`deepspeed_sft`,
    :mod:`deepspeed_grpo`): the model and rows go to disk, ``processes`` worker ranks train
    (one per GPU; gloo on a CPU), rank 0 writes the merged model, which is loaded back.
    Returns (model, steps)."""
    import json

    import torch
    from deepspeed_sft import STAGES, launch
    from transformers import AutoModelForCausalLM

    processes = processes or torch.cuda.device_count() or 1
    started = time.monotonic()
    work = scratch / f"deepspeed-{int(started * 1000)}"
    (work / "in").mkdir(parents=True)
    model.save_pretrained(work / "in")
    tokenizer.save_pretrained(work / "in")
    with (work / "rows.jsonl").open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    job = {
        **job,
        "model": str(work / "in"),
        "rows": str(work / "rows.jsonl"),
        "out": str(work / "out"),
        "stage": STAGES[stage],
        # a wall-clock deadline: the workers' start-up (process group, DeepSpeed, loading)
        # comes out of the phase's time
        "deadline": time.time() + max(1.0, seconds - (time.monotonic() - started)),
    }
    (work / "out").mkdir()
    log(
        f"  {phase} under deepspeed {stage} on {processes} process(es), "
        f"up to {job['max_steps']} steps"
    )
    worker = "deepspeed_grpo.py" if phase == "grpo" else None
    result = launch(job, processes, work / "deepspeed.log", worker)
    rewards = result.get("rewards")
    log(
        f"  {phase} (deepspeed {stage}, {result['world_size']} rank(s)) on {result.get('device')}: "
        f"{result['steps']} steps in {result['seconds']:.0f}s, "
        + (
            f"mean reward {rewards[0]:.3f} -> {rewards[-1]:.3f}"
            if rewards
            else f"loss {result['losses'][0]:.3f} -> {result['losses'][-1]:.3f}"
        )
    )
    trained = AutoModelForCausalLM.from_pretrained(work / "out", dtype=model.dtype)
    return trained.to(model.device), int(result["steps"])


def sft_in_rotation(rows: list[dict[str, Any]], *, timed: bool = True, **options: Any) -> Any:
    """A phase function for :func:`rounds.run_rounds`: :func:`run_sft` on ``rows``, each phase
    starting in the rows where the previous one stopped (a later round sees new rows first).

    ``options`` are :func:`run_sft`'s (``mode``, ``batch_size``, ``lr``, ``epochs``...); the
    seed is the phase's. ``timed``: pass the run's measured step times (warm-up sized to the
    phase); without them there is no warm-up.
    """
    offset = 0
    batch_size = options.setdefault("batch_size", 4)

    def phase(run: Any, seconds: float) -> tuple[Any, int]:
        nonlocal offset
        model, steps = run_sft(
            run.model,
            run.tokenizer,
            rows[offset:] + rows[:offset],
            seconds=seconds,
            scratch=run.scratch,
            seed=run.seed,
            step_times=run.step_times if timed else None,
            **options,
        )
        offset = (offset + steps * batch_size) % max(1, len(rows))
        return model, steps

    return phase


def reward_reference(reward_fn: Any) -> str:
    """``module:name`` of a reward function a DeepSpeed worker can import (the kit's)."""
    module, name = getattr(reward_fn, "__module__", None), getattr(reward_fn, "__name__", "")
    found = getattr(sys.modules.get(module or ""), name, None)
    if module in (None, "__main__") or found is None or found != reward_fn:
        raise ValueError(
            f"the GRPO reward {reward_fn!r} must be a module-level function the DeepSpeed "
            "workers can import (e.g. the kit's trl_reward)"
        )
    return f"{module}:{name}"


def run_grpo(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    reward_fn: Any,
    *,
    mode: str,
    seconds: float,
    scratch: Path,
    max_steps: int = 16,
    prompts_per_step: int = 2,
    generations: int = 4,
    lr: float | None = None,
    max_new_tokens: int = 160,
    lora_r: int = 16,
    seed: int = 0,
    step_times: StepTimes | None = None,
    deepspeed: str | None = None,
    processes: int | None = None,
) -> tuple[Any, int]:
    """GRPO with the kit's reward until ``seconds`` pass or ``max_steps``; (merged model, steps).
    With ``deepspeed`` (``zero2``/``zero3``) the phase runs under DeepSpeed ZeRO on
    ``processes`` ranks (:mod:`deepspeed_grpo`; ``reward_fn`` must be importable there by its
    module and name, as the kit's ``trl_reward`` is), each rank sampling ``prompts_per_step``
    prompts' groups.

    With ``step_times``, the step shape is fitted to the time share first: the seconds of one
    step (measured in an earlier GRPO phase, else estimated from a short sampled generation)
    decide whether fewer new tokens, prompts or generations are needed for two steps to fit.
    """
    if deepspeed:
        return deepspeed_phase(
            model,
            tokenizer,
            rows,
            stage=deepspeed,
            processes=processes,
            seconds=seconds,
            scratch=scratch,
            phase="grpo",
            reward=reward_reference(reward_fn),
            prompts_per_step=prompts_per_step,
            generations=generations,
            max_new_tokens=max_new_tokens,
            temperature=1.0,
            lr=lr or (5e-5 if mode == "lora" else 1e-6),
            max_steps=max_steps,
            mode=mode,
            lora_r=lora_r,
            seed=seed,
        )
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    if step_times is not None:
        shape = (prompts_per_step, generations, max_new_tokens)
        step_s = step_times.get("grpo", size=prompts_per_step * generations * max_new_tokens)
        if step_s is None:
            prompt = tokenizer.apply_chat_template(
                rows[0]["prompt"], tokenize=False, add_generation_prompt=True
            )
            step_s = estimate_generation_step_seconds(
                model, tokenizer, prompt, prompts_per_step * generations, max_new_tokens
            )
        prompts_per_step, generations, max_new_tokens = fit_generation_shape(
            seconds, step_s, prompts_per_step, generations, max_new_tokens
        )
        if (prompts_per_step, generations, max_new_tokens) != shape:
            log(
                f"  grpo: a {shape[0]}x{shape[1]}x{shape[2]} step takes ~{step_s:.0f}s, too "
                f"long for {seconds:.0f}s; using {prompts_per_step} prompts x {generations} "
                f"generations x {max_new_tokens} new tokens"
            )
    tokenizer.padding_side = "left"
    config = GRPOConfig(
        **trainer_args(scratch, seed),
        per_device_train_batch_size=prompts_per_step * generations,
        num_generations=generations,
        max_completion_length=max_new_tokens,
        learning_rate=lr or (5e-5 if mode == "lora" else 1e-6),
        max_steps=max_steps,
        beta=0.0,  # no reference model: half the memory and forward passes
        temperature=1.0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward_fn],
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora_config(lora_r) if mode == "lora" else None,
        callbacks=[stopper := stop_at_callback(time.monotonic() + seconds, label="grpo")],
    )
    trainer.train()
    if step_times is not None:
        step_times.record("grpo", stopper, size=prompts_per_step * generations * max_new_tokens)
    steps = trainer.state.global_step
    return merged(trainer.model), steps
