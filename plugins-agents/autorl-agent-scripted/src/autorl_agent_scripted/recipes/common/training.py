"""Training phases shared by the recipes: LoRA config, TRL SFT and GRPO phases, time shares.

Copied into ``workspace/code/`` with the other common files. torch, TRL and PEFT are imported
inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

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
    stop_at_callback,
)


def lora_config(r: int) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )


def trainer_args(scratch: Path, seed: int) -> dict[str, Any]:
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
        "gradient_checkpointing": False,  # small models: compute, not memory, is the limit
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
    max_length: int = 512,
    lora_r: int = 16,
    seed: int = 0,
    step_times: StepTimes | None = None,
) -> tuple[Any, int]:
    """SFT until ``seconds`` pass or ``epochs`` are done; returns (merged model, steps run).

    Warm-up is sized to the steps the phase can run (none when short or not yet timed).
    """
    from datasets import Dataset
    from datasets.utils.logging import disable_progress_bar
    from trl import SFTConfig, SFTTrainer

    disable_progress_bar()  # per-batch bars would flood the agent log

    tokenizer.padding_side = "right"
    max_steps = max(1, int(len(rows) * epochs / batch_size))
    step_s = step_times.get("sft") if step_times else None
    config = SFTConfig(
        **trainer_args(scratch, seed),
        per_device_train_batch_size=batch_size,
        learning_rate=lr or (2e-4 if mode == "lora" else 2e-5),
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=phase_warmup(max_steps, seconds, step_s),
        max_steps=max_steps,
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
    log(f"  sft: up to {max_steps} steps, warm-up {config.warmup_steps}")
    trainer.train()
    if step_times is not None:
        step_times.record("sft", stopper)
    steps = trainer.state.global_step
    return merged(trainer.model), steps


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
) -> tuple[Any, int]:
    """GRPO with the kit's reward until ``seconds`` pass or ``max_steps``; (merged model, steps).

    With ``step_times``, the step shape is fitted to the time share first: the seconds of one
    step (measured in an earlier GRPO phase, else estimated from a short sampled generation)
    decide whether fewer new tokens, prompts or generations are needed for two steps to fit.
    """
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


# plan ------------------------------------------------------------------------------------------


def phase_seconds(left: float, reserve: float, phases_left: int, weight: float = 1.0) -> float:
    """This phase's share of the time left after keeping ``reserve`` for its save."""
    usable = left - reserve
    return max(0.0, usable * weight / max(1, phases_left))
