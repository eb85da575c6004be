"""GRPO under DeepSpeed ZeRO (stage 2 or 3) through accelerate: the recipes' GRPO phase (the
kit's reward, groups of sampled completions per prompt, group-normalised advantages) in worker
processes of its own, launched like :mod:`deepspeed_sft`.

Every rank samples its own prompts' groups (under ZeRO-3 with the whole model gathered and ZeRO's
hooks off for the sampling, :func:`gathered`), scores them with the reward, and takes the on-policy
policy-gradient step of GRPO with one update per batch (the clipped ratio is 1 there) and no KL
term (``beta = 0``, as the recipes' TRL phase); DeepSpeed averages the gradients over the
ranks. A step starts only while 1.25x the slowest step so far fits before the deadline. Rank 0
writes the merged model.

    python deepspeed_grpo.py JOB.json       # one process; :func:`deepspeed_sft.launch` for N

JOB: :mod:`deepspeed_sft`'s keys (``model``, ``out``, ``stage``, ``lr``, ``max_steps``,
``mode``, ``lora_r``, ``seed``, ``deadline``) plus ``rows`` (JSON lines of ``{"prompt":
messages, ...}`` with the reward's columns), ``reward`` (``module:function``, TRL's reward
shape: ``fn(completions, **columns) -> list[float]``, importable in the worker: the kit's
``trl_reward``), ``prompts_per_step`` (per rank), ``generations``, ``max_new_tokens``,
``temperature``. Copied into ``workspace/code/`` with the other common files; no autorl import.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from deepspeed_sft import finish, load_model, make_accelerator, past
from recipe_common import group_advantages


def reward_function(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def gathered(model: Any, stage: int) -> Any:
    """Under ZeRO-3, every rank holds the whole model while it samples, with ZeRO's per-module
    hooks off (DeepSpeed's own ``unwrap_model_for_generation``, as TRL does): otherwise each
    new token runs a fetch hook in every module. For models that fit one device. A no-op under
    ZeRO-2, where each rank holds all weights anyway."""
    if stage != 3:
        return contextlib.nullcontext()
    from deepspeed.runtime.zero.stage3 import unwrap_model_for_generation

    return unwrap_model_for_generation(model)


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    stage = int(job["stage"])
    accelerator = make_accelerator(stage)
    import torch

    seed = int(job.get("seed", 0))
    torch.manual_seed(seed + accelerator.process_index)
    model, tokenizer, lora = load_model(job)
    tokenizer.padding_side = "left"
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    reward = reward_function(job["reward"])
    rows = [json.loads(line) for line in Path(job["rows"]).read_text().splitlines() if line]
    random.Random(seed + accelerator.process_index).shuffle(rows)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=float(job["lr"]))
    per_step, group = int(job["prompts_per_step"]), int(job["generations"])
    # no data loader to read the batch from: one micro-batch per rank is a step's completions
    config = accelerator.state.deepspeed_plugin.deepspeed_config
    config["train_micro_batch_size_per_gpu"] = per_step * group
    model, optimizer = accelerator.prepare(model, optimizer)
    deadline = float(job.get("deadline", time.time() + 1e9))

    started, steps, losses, mean_rewards, cursor, slowest = time.monotonic(), 0, [], [], 0, 0.0
    # a GRPO step is long (sampling): none starts unless 1.25x the slowest so far still fits
    while steps < int(job["max_steps"]) and not (
        steps and past(accelerator, deadline, 1.25 * slowest)
    ):
        step_started = time.monotonic()
        batch = [rows[(cursor + i) % len(rows)] for i in range(per_step)]
        cursor += per_step
        prompts = [
            tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=False)
            for r in batch
        ]
        encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        encoded = {k: v.to(accelerator.device) for k, v in encoded.items()}
        width = encoded["input_ids"].shape[1]
        model.eval()
        with torch.no_grad(), gathered(model, stage):
            sampled = accelerator.unwrap_model(model).generate(
                **encoded,
                do_sample=True,
                temperature=float(job.get("temperature", 1.0)),
                max_new_tokens=int(job["max_new_tokens"]),
                num_return_sequences=group,
                pad_token_id=pad,
            )
        completions = tokenizer.batch_decode(sampled[:, width:], skip_special_tokens=True)
        columns = {
            key: [r[key] for r in batch for _ in range(group)]
            for key in batch[0]
            if key != "prompt"
        }
        rewards = [float(x) for x in reward(completions, **columns)]
        groups = [i // group for i in range(len(rewards))]  # each prompt's samples, in a row
        advantages = torch.tensor(group_advantages(rewards, groups), device=accelerator.device)
        # the completion's tokens only (not the prompt, not the padding after an end)
        completion = sampled[:, width:]
        mask = torch.ones_like(completion, dtype=torch.float32)
        ended = completion == (tokenizer.eos_token_id if tokenizer.eos_token_id is not None else -1)
        after_end = torch.cumsum(ended.int(), dim=1) - ended.int() > 0
        mask[after_end] = 0.0
        attention = torch.cat(
            [encoded["attention_mask"].repeat_interleave(group, 0), mask.long()], 1
        )
        model.train()
        logits = model(input_ids=sampled, attention_mask=attention).logits[:, width - 1 : -1]
        logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, completion.unsqueeze(-1))
        per_token = -(advantages.unsqueeze(1) * logp.squeeze(-1)) * mask
        loss = (per_token.sum(1) / mask.sum(1).clamp(min=1)).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        steps += 1
        slowest = max(slowest, time.monotonic() - step_started)
        losses.append(float(loss.detach()))
        mean_rewards.append(sum(rewards) / len(rewards))
        if accelerator.is_main_process:
            print(
                f"  deepspeed grpo step {steps}: reward {mean_rewards[-1]:.3f}, "
                f"loss {losses[-1]:.4f}",
                flush=True,
            )
    result = {
        "steps": steps,
        "losses": losses,
        "rewards": mean_rewards,
        "seconds": round(time.monotonic() - started, 2),
    }
    return finish(accelerator, model, tokenizer, lora, job, result)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
