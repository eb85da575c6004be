"""Structurally valid checkpoint directories for tests (no torch needed)."""

from __future__ import annotations

import json
from pathlib import Path


def write_checkpoint(path: Path, seed: int = 0) -> Path:
    """Write config.json, a small safetensors file and a tokenizer file; ``seed`` varies weights."""
    import numpy as np
    from safetensors.numpy import save_file

    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    weights = np.random.default_rng(seed).standard_normal((4, 4)).astype("float32")
    save_file({"w": weights}, str(path / "model.safetensors"))
    (path / "tokenizer.json").write_text("{}")
    (path / "tokenizer_config.json").write_text("{}")
    return path


def moved_checkpoint(base: Path, out: Path, seed: int, scale: float = 0.03) -> Path:
    """A full fine-tune's checkpoint as the grader assembles one: the base's files (config,
    tokenizer) around its weights with every tensor moved by ``scale`` of its mean magnitude
    (seeded), the embedding and a tied output head included. Needs torch and transformers."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    noise = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn(param.shape, generator=noise) * param.abs().mean() * scale)
    model.save_pretrained(out)
    for file in Path(base).iterdir():
        if file.is_file() and not file.name.endswith((".safetensors", ".bin", ".index.json")):
            shutil.copyfile(file, out / file.name)
    return out
