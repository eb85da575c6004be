"""Turn an agent's LoRA adapter into a full model the evaluators can load."""

from __future__ import annotations

import json
from pathlib import Path


class CheckpointError(Exception):
    """The adapter cannot be applied to the base model; the message says why."""


def merge_lora(adapter_dir: Path, base_dir: Path, out_dir: Path) -> Path:
    """Load the base model, apply the adapter, merge it, and save model + tokenizer."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = json.loads((adapter_dir / "adapter_config.json").read_text())
    if config.get("peft_type") != "LORA":
        raise CheckpointError(
            f"adapter_config.json: peft_type {config.get('peft_type')!r} is not supported; "
            "submit a LoRA adapter or a full model"
        )
    base = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    try:
        model = PeftModel.from_pretrained(base, str(adapter_dir))
    except (RuntimeError, ValueError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(
            f"the LoRA adapter does not fit the base model ({first}); train it on models/base"
        ) from None
    merged = model.merge_and_unload()
    out_dir.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(str(out_dir), safe_serialization=True)
    tokenizer_src = adapter_dir if (adapter_dir / "tokenizer_config.json").exists() else base_dir
    AutoTokenizer.from_pretrained(str(tokenizer_src)).save_pretrained(str(out_dir))
    return out_dir
