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
