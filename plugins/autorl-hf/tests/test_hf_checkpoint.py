"""merge_lora and load_check on real checkpoints built from the tiny model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from autorl_hf.checkpoint import CheckpointError, load_check, merge_lora
from autorl_hf.generation import generate
from autorl_hf.loading import load_model

from autorl.errors import CheckpointError as CoreCheckpointError

PROMPTS = [[{"role": "user", "content": "What is 4 + 5?"}], "<|user|>\nHi<|end|>\n<|assistant|>\n"]


def train_lora(base_dir: Path, out_dir: Path, steps: int = 2, targets: Any = None) -> Any:
    """A real LoRA adapter: a few AdamW steps on chat text, saved with save_pretrained."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(str(base_dir))
    model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    config = LoraConfig(
        r=4,
        lora_alpha=16,
        target_modules=targets or ["q_proj", "v_proj", "up_proj"],
        init_lora_weights=False,  # non-zero B: the merge must visibly change the weights
    )
    peft_model = get_peft_model(model, config)
    text = "<|user|>\nWhat is 4 + 5?<|end|>\n<|assistant|>\n4 + 5 = 9\n#### 9<|end|>\n"
    batch = tokenizer([text], return_tensors="pt")
    opt = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(steps):
        loss = peft_model(**batch, labels=batch["input_ids"]).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    peft_model.save_pretrained(str(out_dir))
    return peft_model


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_merge_round_trip(tiny_dir: Path, tmp_path: Path, tiny: tuple[Any, Any]) -> None:
    import torch

    peft_model = train_lora(tiny_dir, tmp_path / "adapter")
    merged_dir = merge_lora(tmp_path / "adapter", tiny_dir, tmp_path / "merged")
    assert (merged_dir / "model.safetensors").is_file()
    assert not (merged_dir / "adapter_config.json").exists()
    load_check(merged_dir)
    merged, tokenizer = load_model(merged_dir, device="cpu")
    ids = tokenizer(["<|user|>\nWhat is 4 + 5?<|end|>\n"], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        expected = peft_model.eval()(input_ids=ids).logits
        got = merged(input_ids=ids).logits
        base = tiny[0](input_ids=ids).logits
    assert torch.allclose(got, expected, atol=1e-4), "merged model must equal base + adapter"
    assert not torch.allclose(got, base, atol=1e-3), "the adapter must change the model"
    outputs = generate(merged, tokenizer, PROMPTS, max_new_tokens=8)
    assert len(outputs) == 2 and all(isinstance(o, str) for o in outputs)


def test_adapter_tokenizer_wins_over_the_base(tiny_dir: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    train_lora(tiny_dir, tmp_path / "adapter", steps=1)
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_dir))
    tokenizer.model_max_length = 77
    tokenizer.save_pretrained(str(tmp_path / "adapter"))
    merge_lora(tmp_path / "adapter", tiny_dir, tmp_path / "merged")
    assert AutoTokenizer.from_pretrained(str(tmp_path / "merged")).model_max_length == 77


def other_architecture(tmp_path: Path, tiny_dir: Path) -> Path:
    """A Qwen2 with other shapes, same module names, saved with the tiny tokenizer."""
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=1024, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True,
    )  # fmt: skip
    path = tmp_path / "other"
    Qwen2ForCausalLM(config).save_pretrained(str(path))
    AutoTokenizer.from_pretrained(str(tiny_dir)).save_pretrained(str(path))
    return path


def test_adapter_of_another_architecture_is_refused(tiny_dir: Path, tmp_path: Path) -> None:
    other = other_architecture(tmp_path, tiny_dir)
    train_lora(other, tmp_path / "adapter", steps=1)
    with pytest.raises(CheckpointError, match=r"does not fit the base model") as info:
        merge_lora(tmp_path / "adapter", tiny_dir, tmp_path / "merged")
    assert "size mismatch" in str(info.value) or "no place" in str(info.value)
    assert isinstance(info.value, CoreCheckpointError)  # the grading service catches this one
    assert not (tmp_path / "merged" / "model.safetensors").exists()


def test_adapter_for_missing_modules_is_refused(tiny_dir: Path, tmp_path: Path) -> None:
    train_lora(tiny_dir, tmp_path / "adapter", steps=1)
    cfg_path = tmp_path / "adapter" / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["target_modules"] = ["c_attn"]  # a GPT-2 module name
    cfg_path.write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match=r"does not fit the base model.*c_attn"):
        merge_lora(tmp_path / "adapter", tiny_dir, tmp_path / "merged")


def test_corrupt_or_incomplete_adapters(tiny_dir: Path, tmp_path: Path) -> None:
    adapter = tmp_path / "adapter"
    train_lora(tiny_dir, adapter, steps=1)
    weights = adapter / "adapter_model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"adapter_model.safetensors: truncated file"):
        merge_lora(adapter, tiny_dir, tmp_path / "merged")
    weights.unlink()
    with pytest.raises(CheckpointError, match=r"adapter weights missing"):
        merge_lora(adapter, tiny_dir, tmp_path / "merged")
    (adapter / "adapter_config.json").write_text('{"peft_type": "IA3"}')
    with pytest.raises(CheckpointError, match=r"peft_type 'IA3' is not supported"):
        merge_lora(adapter, tiny_dir, tmp_path / "merged")
    (adapter / "adapter_config.json").unlink()
    with pytest.raises(CheckpointError, match=r"adapter_config.json missing"):
        merge_lora(adapter, tiny_dir, tmp_path / "merged")


@pytest.fixture
def copy_of_tiny(tiny_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(tiny_dir, target)
    for path in target.iterdir():
        path.chmod(0o644)
    return target


def test_load_check_accepts_the_tiny_model(tiny_dir: Path) -> None:
    load_check(tiny_dir)


def test_load_check_truncated_weights(copy_of_tiny: Path) -> None:
    weights = copy_of_tiny / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1000])
    with pytest.raises(CheckpointError, match=r"model.safetensors: truncated file \(\d+ bytes"):
        load_check(copy_of_tiny)
    weights.write_bytes(b"\x00" * 4)
    with pytest.raises(CheckpointError, match=r"not a valid safetensors file"):
        load_check(copy_of_tiny)


def test_load_check_missing_tokenizer(copy_of_tiny: Path) -> None:
    (copy_of_tiny / "tokenizer.json").unlink()
    with pytest.raises(CheckpointError, match=r"tokenizer missing: add tokenizer.json"):
        load_check(copy_of_tiny)


def test_load_check_weights_of_another_model(copy_of_tiny: Path) -> None:
    cfg_path = copy_of_tiny / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["num_hidden_layers"] += 1
    cfg["layer_types"].append("full_attention")
    cfg_path.write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match=r"the weights do not cover the model"):
        load_check(copy_of_tiny)
    cfg["num_hidden_layers"] -= 1
    cfg["layer_types"].pop()
    cfg["intermediate_size"] += 16
    cfg_path.write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match=r"(mismatch|cannot be loaded)"):
        load_check(copy_of_tiny)


def test_load_check_nan_weights(copy_of_tiny: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    weights = copy_of_tiny / "model.safetensors"
    tensors = load_file(str(weights))
    name = sorted(tensors)[3]
    tensors[name][0] = float("nan")
    save_file(tensors, str(weights), metadata={"format": "pt"})
    assert torch.isnan(load_file(str(weights))[name]).any()
    with pytest.raises(CheckpointError, match=r"NaN or inf"):
        load_check(copy_of_tiny)


def test_load_check_missing_config_and_directory(copy_of_tiny: Path, tmp_path: Path) -> None:
    (copy_of_tiny / "config.json").unlink()
    with pytest.raises(CheckpointError, match=r"config.json missing"):
        load_check(copy_of_tiny)
    with pytest.raises(CheckpointError, match=r"no such directory"):
        load_check(tmp_path / "nowhere")


@pytest.mark.slow  # over 1.5 CPU-s: make test, not make check
def test_a_generator_merges_an_adapter_onto_the_base(tiny_dir: Path, tmp_path: Path) -> None:
    """The model layer owns LoRA merges: a Generator given an adapter directory and the base
    generates exactly what the merged model does, and leaves no merged copy behind."""
    import gc
    import tempfile

    from autorl_hf.generation import Generator

    train_lora(tiny_dir, tmp_path / "adapter")
    merged = merge_lora(tmp_path / "adapter", tiny_dir, tmp_path / "merged")
    prompts = [[{"role": "user", "content": "What is 2 + 3?"}]]
    want = Generator(merged, device="cpu").generate(prompts, max_new_tokens=8)
    before = set(Path(tempfile.gettempdir()).glob("autorl-merged-*"))
    generator = Generator(tmp_path / "adapter", device="cpu", base_dir=tiny_dir)
    assert generator.generate(prompts, max_new_tokens=8) == want
    scratch = set(Path(tempfile.gettempdir()).glob("autorl-merged-*")) - before
    assert len(scratch) == 1
    del generator
    gc.collect()
    assert not any(p.exists() for p in scratch)
    with pytest.raises(CheckpointError, match="needs the base model"):
        Generator(tmp_path / "adapter", device="cpu")
