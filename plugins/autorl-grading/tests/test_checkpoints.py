"""Checkpoint intake: precise messages for each way a checkpoint can be broken."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from autorl_grading.checkpoints import CheckpointError, hash_weights, validate
from autorl_testing.checkpoints import write_checkpoint
from safetensors.numpy import save_file


def test_valid_full_checkpoint(tmp_path: Path) -> None:
    info = validate(write_checkpoint(tmp_path / "v1"))
    assert info.kind == "full"
    assert info.weight_files == ("model.safetensors",)
    assert info.weight_hash == hash_weights(tmp_path / "v1")


def test_lora_adapter_is_recognised(tmp_path: Path) -> None:
    ckpt = tmp_path / "lora"
    ckpt.mkdir()
    (ckpt / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 4}))
    save_file({"a": np.zeros((2, 2), dtype="float32")}, str(ckpt / "adapter_model.safetensors"))
    assert validate(ckpt).kind == "lora"
    (ckpt / "adapter_model.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"adapter_model\.safetensors"):
        validate(ckpt)


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("no_config", "config.json missing"),
        ("bad_json", "not valid JSON"),
        ("no_model_type", "model_type"),
        ("no_weights", "no weights"),
        ("garbage_weights", "not a valid safetensors"),
        ("truncated", "truncated"),
        ("no_tokenizer", "tokenizer missing"),
    ],
)
def test_broken_checkpoints_have_precise_reasons(
    tmp_path: Path, breakage: str, message: str
) -> None:
    ckpt = write_checkpoint(tmp_path / "v1")
    weights = ckpt / "model.safetensors"
    if breakage == "no_config":
        (ckpt / "config.json").unlink()
    elif breakage == "bad_json":
        (ckpt / "config.json").write_text("{not json")
    elif breakage == "no_model_type":
        (ckpt / "config.json").write_text("{}")
    elif breakage == "no_weights":
        weights.unlink()
    elif breakage == "garbage_weights":
        weights.write_bytes(b"\xff" * 64)
    elif breakage == "truncated":
        weights.write_bytes(weights.read_bytes()[:-8])
    elif breakage == "no_tokenizer":
        (ckpt / "tokenizer.json").unlink()
    with pytest.raises(CheckpointError, match=message):
        validate(ckpt)


def test_different_weights_hash_differently(tmp_path: Path) -> None:
    a = hash_weights(write_checkpoint(tmp_path / "a", seed=1))
    b = hash_weights(write_checkpoint(tmp_path / "b", seed=2))
    c = hash_weights(write_checkpoint(tmp_path / "c", seed=1))
    assert a != b and a == c
