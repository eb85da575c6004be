"""Load a Hugging Face model directory for inference, with left padding for batched generation."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def pick_device(device: str = "auto") -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def configure_threads() -> None:
    """Use every core the process may run on (torch defaults can undercount in containers)."""
    import torch

    wanted = int(os.environ.get("OMP_NUM_THREADS", "0")) or len(os.sched_getaffinity(0))
    if torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)


def load_tokenizer(path: str | Path) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model(path: str | Path, *, device: str = "auto", dtype: Any = None) -> tuple[Any, Any]:
    """Return ``(model, tokenizer)`` in eval mode on ``device`` (fp32 on CPU, bf16 on GPU)."""
    import torch
    from transformers import AutoModelForCausalLM

    device = pick_device(device)
    if device == "cpu":
        configure_threads()
    if dtype is None:
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
    model.to(device)
    model.eval()
    tokenizer = load_tokenizer(path)
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer
