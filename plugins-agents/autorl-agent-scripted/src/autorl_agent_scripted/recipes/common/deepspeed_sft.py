"""SFT under DeepSpeed ZeRO (stage 2 or 3) through accelerate, in worker processes of its own:
the completion-only loss of the recipes' SFT, in a plain accelerate loop (TRL's trainer counts
one process on a CPU under DeepSpeed, so its batch sizes disagree with DeepSpeed's).

The recipe's process stays single (rollouts, submissions, the clock); this module is the worker
it launches for one SFT phase: ``accelerate launch --num_processes N deepspeed_sft.py JOB`` on
N GPUs (one process per GPU, NCCL), or on the CPU with gloo (what CI runs: DeepSpeed's CPU
accelerator). Every rank trains its share of each batch; rank 0 writes the merged model.

    python -m deepspeed_sft JOB.json           # one process (env set here)
    accelerate launch --num_processes 2 --num_machines 1 --main_process_ip 127.0.0.1 \\
        --main_process_port PORT deepspeed_sft.py JOB.json

JOB: ``{"model", "rows", "out", "stage", "batch_size", "lr", "max_steps", "max_length",
"mode", "lora_r", "seed", "deadline"}`` (``rows``: a JSON-lines file of SFT rows; ``deadline``:
wall-clock seconds since the epoch, after which no step starts).
Copied into ``workspace/code/`` with the other common files; no autorl import.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STAGES = {"zero2": 2, "zero3": 3}
PORT_ATTEMPTS = 3
"""Launches tried while the rendezvous port, free when picked, is taken before it is bound (a
busy host's other processes: the port is picked by binding port 0 and closing it)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch(
    job: dict[str, Any], processes: int, log_path: Path, worker: str | None = None
) -> dict[str, Any]:
    """Run the worker (this module, or ``worker``: another script beside it) on ``processes``
    ranks (loopback rendezvous) and return rank 0's result; a failed worker raises with the
    tail of its log."""
    job_path = Path(job["out"]).with_suffix(".job.json")
    job_path.write_text(json.dumps(job), encoding="utf-8")
    here = str(Path(__file__).resolve().with_name(worker) if worker else Path(__file__).resolve())
    env = {**os.environ, "DS_ACCELERATOR": os.environ.get("DS_ACCELERATOR", "") or _accel()}
    for attempt in range(PORT_ATTEMPTS):
        if processes <= 1:  # the worker picks its rendezvous port itself (MASTER_PORT)
            argv = [sys.executable, here, str(job_path)]
        else:
            argv = [
                sys.executable, "-m", "accelerate.commands.launch",
                "--num_processes", str(processes), "--num_machines", "1",
                "--main_process_ip", "127.0.0.1", "--main_process_port", str(free_port()),
                "--use_deepspeed", "--zero_stage", str(job["stage"]),
                "--mixed_precision", "no", here, str(job_path),
            ]  # fmt: skip
        start = log_path.stat().st_size if log_path.exists() else 0
        with log_path.open("a", encoding="utf-8") as log:
            done = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, env=env, check=False)
        if done.returncode == 0 or not _port_taken(log_path, start):
            break
        # the free port was taken between our check and the rendezvous's bind: another port
        print(f"  rendezvous port taken (attempt {attempt + 1}): retrying", flush=True)
    result = Path(job["out"]) / "deepspeed_result.json"
    if done.returncode != 0 or not result.is_file():
        tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        name = Path(here).stem
        raise RuntimeError(f"{name} failed (exit {done.returncode}): " + " | ".join(tail))
    return json.loads(result.read_text(encoding="utf-8"))


def _port_taken(log_path: Path, start: int) -> bool:
    """Whether the attempt logged from byte ``start`` failed to bind its rendezvous port."""
    with log_path.open("rb") as log:
        log.seek(start)
        return b"EADDRINUSE" in log.read()


def _accel() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def encode(tokenizer: Any, row: dict[str, Any], max_length: int | None) -> tuple[list, list]:
    """A conversational prompt-completion row (or a pre-tokenized ``input_ids`` +
    ``completion_mask`` one) as token ids and a mask of its completion."""
    if "input_ids" in row:
        return list(row["input_ids"])[:max_length], list(row["completion_mask"])[:max_length]
    prompt = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=True)
    full = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=True)
    prompt, full = (
        list(getattr(prompt, "input_ids", prompt)),
        list(getattr(full, "input_ids", full)),
    )
    mask = [0] * len(prompt) + [1] * (len(full) - len(prompt))
    return full[:max_length], mask[:max_length]


def make_accelerator(stage: int) -> Any:
    """This process's rank under DeepSpeed ZeRO ``stage``: NCCL and bf16 on GPUs, gloo and fp32
    on a CPU (a single process without a launcher gets the rendezvous variables here)."""
    for key, value in {"MASTER_ADDR": "127.0.0.1", "RANK": "0", "WORLD_SIZE": "1"}.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DeepSpeedPlugin, InitProcessGroupKwargs

    on_gpu = torch.cuda.is_available()

    if not on_gpu:
        # DeepSpeed's CPU accelerator compiles a shared-memory all-reduce on first use (~2
        # minutes, in a cache every fresh HOME lacks); gloo does the same job uncompiled
        import deepspeed.ops

        deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    plugin = DeepSpeedPlugin(
        zero_stage=stage,
        gradient_accumulation_steps=1,
        gradient_clipping=1.0,
        zero3_init_flag=False,
        zero3_save_16bit_model=stage == 3,  # the full weights gathered on rank 0 at the end
    )
    # the backend named: on a CPU accelerate leaves it unset, and every rank then believes it
    # is alone (DeepSpeed's batch check fails: "train_batch_size ... 4 != 4 * 1 * 2")
    return Accelerator(
        deepspeed_plugin=plugin,
        mixed_precision="bf16" if on_gpu else "no",
        kwargs_handlers=[InitProcessGroupKwargs(backend="nccl" if on_gpu else "gloo")],
    )


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    stage = int(job["stage"])
    accelerator = make_accelerator(stage)
    import torch

    torch.manual_seed(int(job.get("seed", 0)))
    model, tokenizer, lora = load_model(job)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    rows = [json.loads(line) for line in Path(job["rows"]).read_text().splitlines() if line]
    examples = [encode(tokenizer, row, job.get("max_length")) for row in rows]
    batch = int(job["batch_size"])

    def collate(items: list[tuple[list, list]]) -> dict[str, Any]:
        width = max(len(ids) for ids, _ in items)
        ids = torch.full((len(items), width), pad)
        labels = torch.full((len(items), width), -100)
        attention = torch.zeros((len(items), width), dtype=torch.long)
        for i, (tokens, mask) in enumerate(items):
            ids[i, : len(tokens)] = torch.tensor(tokens)
            attention[i, : len(tokens)] = 1
            labels[i, : len(tokens)] = torch.tensor(
                [t if m else -100 for t, m in zip(tokens, mask, strict=True)]
            )
        return {"input_ids": ids, "attention_mask": attention, "labels": labels}

    loader = torch.utils.data.DataLoader(
        examples, batch_size=batch, shuffle=True, collate_fn=collate
    )
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=float(job["lr"]))
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    deadline = float(job.get("deadline", time.time() + 1e9))
    started, steps, losses = time.monotonic(), 0, []
    model.train()
    while steps < int(job["max_steps"]) and (steps == 0 or not past(accelerator, deadline)):
        for inputs in loader:
            loss = model(**inputs).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            steps += 1
            losses.append(float(loss.detach()))
            if accelerator.is_main_process:
                print(f"  deepspeed sft step {steps}: loss {losses[-1]:.3f}", flush=True)
            if steps >= int(job["max_steps"]) or past(accelerator, deadline):
                break
    result = {
        "steps": steps,
        "losses": losses,
        "seconds": round(time.monotonic() - started, 2),
    }
    return finish(accelerator, model, tokenizer, lora, job, result)


def past(accelerator: Any, deadline: float, step_seconds: float = 0.0) -> bool:
    """Whether any rank is past the deadline, or would be after another step of
    ``step_seconds``: every rank stops at the same step (one rank stepping alone would wait
    forever in ZeRO's collectives)."""
    import torch

    late = torch.tensor([float(time.time() + step_seconds >= deadline)], device=accelerator.device)
    return bool(accelerator.reduce(late, reduction="sum").item() > 0)


def load_model(job: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The job's model (fp32 master weights; LoRA adapters on it in ``mode = "lora"``), its
    tokenizer, and the LoRA config (None for full fine-tuning)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(job["model"])
    model = AutoModelForCausalLM.from_pretrained(job["model"], dtype=torch.float32)
    lora = None
    if job.get("mode") == "lora":
        from peft import LoraConfig, get_peft_model

        r = int(job.get("lora_r", 16))
        lora = LoraConfig(
            r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules="all-linear",
            task_type="CAUSAL_LM",
        )  # fmt: skip
        model = get_peft_model(model, lora)
    return model, tokenizer, lora


def finish(
    accelerator: Any, model: Any, tokenizer: Any, lora: Any, job: dict[str, Any], result: dict
) -> int:
    """Gather the full weights on rank 0, which writes the merged model and
    ``deepspeed_result.json`` (``result`` plus the ranks, stage, device and precision)."""
    import torch
    from transformers import AutoModelForCausalLM

    state = accelerator.get_state_dict(model)  # the full weights, on rank 0
    if accelerator.is_main_process:
        from transformers.integrations.deepspeed import unset_hf_deepspeed_config

        # every collective is done: a plain model on rank 0 alone (under ZeRO-3's config,
        # from_pretrained would partition it and wait for the other ranks forever)
        unset_hf_deepspeed_config()
        out = Path(job["out"])
        fresh = AutoModelForCausalLM.from_pretrained(job["model"], dtype=torch.float32)
        if lora is not None:
            from peft import get_peft_model

            fresh = get_peft_model(fresh, lora)
            fresh.load_state_dict(state)
            fresh = fresh.merge_and_unload()
        else:
            fresh.load_state_dict(state)
        fresh.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)
        on_gpu = accelerator.device.type == "cuda"
        result = {
            **result,
            "world_size": accelerator.num_processes,
            "stage": int(job["stage"]),
            "device": str(accelerator.device),
            "precision": "bf16" if on_gpu else "fp32",
        }
        (out / "deepspeed_result.json").write_text(json.dumps(result), encoding="utf-8")
    accelerator.wait_for_everyone()
    accelerator.end_training()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
