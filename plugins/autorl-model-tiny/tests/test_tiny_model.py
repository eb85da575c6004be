"""The shipped tiny model: registry, materialize, loading, chat format, TRL + PEFT training."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from autorl_model_tiny.model import WEIGHTS_DIR, TinyModel
from autorl_testing.conformance import ModelConformance


class TestTinyConformance(ModelConformance):
    plugin_module = "autorl_model_tiny.plugin"
    materialize = True


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return TinyModel().materialize(tmp_path_factory.mktemp("cache")).path


def test_shipped_files_are_small_and_complete() -> None:
    names = {p.name for p in WEIGHTS_DIR.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= names
    total = sum(p.stat().st_size for p in WEIGHTS_DIR.iterdir())
    assert total < 8 * 1024**2, f"shipped files take {total / 1024**2:.1f} MB (limit 8 MB)"
    build = json.loads((WEIGHTS_DIR / "BUILD.json").read_text())
    assert 1_000_000 <= build["parameters"] <= 4_000_000


def test_materialize_copies_read_only_and_is_idempotent(tmp_path: Path) -> None:
    first = TinyModel().materialize(tmp_path)
    again = TinyModel().materialize(tmp_path)
    assert first.path == again.path and first.path.parent == tmp_path
    assert first.path != WEIGHTS_DIR
    weights = first.path / "model.safetensors"
    assert weights.read_bytes() == (WEIGHTS_DIR / "model.safetensors").read_bytes()
    assert not os.access(weights, os.W_OK) or os.geteuid() == 0
    assert not weights.stat().st_mode & 0o222, "cached copies must be read-only"
    assert [p.name for p in tmp_path.iterdir()] == [first.path.name], "no staging left behind"


def test_loads_with_auto_classes_and_chat_template(tiny_dir: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(tiny_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_dir))
    assert model.config.model_type == "qwen2"
    assert len(tokenizer) == model.get_input_embeddings().weight.shape[0]
    assert tokenizer.eos_token == "<|end|>" and tokenizer.pad_token == "<|pad|>"
    assert tokenizer.tokenize("123") == ["1", "2", "3"], "digits must be single tokens"
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        tokenize=False,
    )
    assert text == "<|user|>\nHi<|end|>\n<|assistant|>\nHello<|end|>\n"
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id


def test_answers_in_the_trained_format(tiny_dir: Path) -> None:
    from autorl_hf.generation import generate_completions
    from autorl_hf.loading import load_model

    model, tokenizer = load_model(tiny_dir, device="cpu")
    questions = [f"What is {a} + {b}?" for a, b in ((2, 3), (4, 4), (7, 1), (5, 2))]
    done = generate_completions(
        model, tokenizer, [[{"role": "user", "content": q}] for q in questions], max_new_tokens=40
    )
    assert all(c.finish == "eos" for c in done), done
    assert all("####" in c.text for c in done), done


def sft_dataset() -> Any:
    from datasets import Dataset

    rows = [
        {
            "messages": [
                {"role": "user", "content": f"What is {a} + {b}?"},
                {"role": "assistant", "content": f"{a} + {b} = {a + b}\n#### {a + b}"},
            ]
        }
        for a in range(4)
        for b in range(4)
    ]
    return Dataset.from_list(rows)


def sft_args(out: Path) -> Any:
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(out),
        max_steps=2,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        dataloader_num_workers=0,
    )


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_trl_sft_full_fine_tuning_changes_the_weights(tiny_dir: Path, tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTTrainer

    model = AutoModelForCausalLM.from_pretrained(str(tiny_dir), dtype=torch.float32)
    before = model.model.layers[0].mlp.up_proj.weight.detach().clone()
    trainer = SFTTrainer(
        model=model,
        args=sft_args(tmp_path / "run"),
        train_dataset=sft_dataset(),
        processing_class=AutoTokenizer.from_pretrained(str(tiny_dir)),
    )
    result = trainer.train()
    assert result.global_step == 2 and result.training_loss > 0
    assert not torch.equal(before, model.model.layers[0].mlp.up_proj.weight)


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_trl_lora_adapter_merges_with_merge_lora(tiny_dir: Path, tmp_path: Path) -> None:
    import torch
    from autorl_hf.checkpoint import load_check, merge_lora
    from autorl_hf.generation import generate
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTTrainer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_dir))
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(str(tiny_dir), dtype=torch.float32),
        args=sft_args(tmp_path / "run"),
        train_dataset=sft_dataset(),
        processing_class=tokenizer,
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]),
    )
    trainer.train()
    trainer.model.save_pretrained(str(tmp_path / "adapter"))
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    merged = merge_lora(tmp_path / "adapter", tiny_dir, tmp_path / "merged")
    load_check(merged)
    [answer] = generate(str(merged), None, ["<|user|>\nWhat is 1 + 2?<|end|>\n<|assistant|>\n"],
                        max_new_tokens=16)  # fmt: skip
    assert isinstance(answer, str)
