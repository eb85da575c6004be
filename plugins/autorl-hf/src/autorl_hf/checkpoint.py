"""Checkpoint checks and LoRA merging: every failure becomes a precise, fixable message.

The harness calls :func:`load_check` on a submission before evaluating it and :func:`merge_lora`
on adapter submissions; a :class:`CheckpointError` turns into a failed submission with its
message, never a crashed run (it subclasses the core's torch-free ``CheckpointError``).
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autorl import safetensors_header
from autorl.errors import CheckpointError as _CoreCheckpointError
from autorl.types import TOKENIZER_VOCAB_FILES

ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")


class CheckpointError(_CoreCheckpointError):
    """A checkpoint or adapter cannot be used; the message says what, where, and how to fix it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _first_line(exc: BaseException, limit: int = 300) -> str:
    """The start of an exception's message on one line (torch puts the detail on line 2)."""
    text = " ".join(str(exc).split())
    if not text:
        return type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_safetensors(path: Path) -> None:
    """The header parses and the file holds every byte the header promises."""
    size = path.stat().st_size
    try:
        data_start, header = safetensors_header.read(path)
        end = max(
            (t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0
        )
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise CheckpointError(
            f"{path.name}: not a valid safetensors file ({_first_line(exc)}); "
            "save it again with save_pretrained(..., safe_serialization=True)"
        ) from None
    if data_start + end > size:
        raise CheckpointError(
            f"{path.name}: truncated file ({size} bytes, its header promises "
            f"{data_start + end}); copy or save it again"
        )


def _weight_files(path: Path) -> list[Path]:
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(
                f"model.safetensors.index.json: unreadable ({_first_line(exc)}); save again"
            ) from None
        missing = [s for s in shards if not (path / s).is_file()]
        if missing:
            raise CheckpointError(
                f"sharded checkpoint is missing {', '.join(missing)} (listed in "
                "model.safetensors.index.json); copy every shard"
            )
        return [path / s for s in shards]
    files = sorted(path.glob("*.safetensors")) or sorted(path.glob("pytorch_model*.bin"))
    if not files:
        raise CheckpointError(
            f"{path}: no weights (expected model.safetensors); save the model with "
            "model.save_pretrained(path)"
        )
    return files


def _check_tokenizer_files(path: Path) -> None:
    if not (path / "tokenizer_config.json").is_file() or not any(
        (path / name).is_file() for name in TOKENIZER_VOCAB_FILES
    ):
        raise CheckpointError(
            "tokenizer missing: add tokenizer.json/tokenizer_config.json "
            "(tokenizer.save_pretrained(path) next to the model)"
        )


def load_check(path: str | Path) -> None:
    """Really load config, weights and tokenizer; raise :class:`CheckpointError` if any fails.

    Stricter than ``from_pretrained``, which only warns: weights that do not cover the model
    (newly initialised parameters), shape mismatches, NaN/inf values, and a tokenizer larger
    than the embedding are errors.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"{path}: no such directory")
    if not (path / "config.json").is_file():
        raise CheckpointError(
            "config.json missing: save the model with model.save_pretrained(path)"
        )
    with _failing_as("config.json: cannot be read ({error}); save it with save_pretrained"):
        config = AutoConfig.from_pretrained(str(path))
    files = _weight_files(path)
    for file in files:
        if file.suffix == ".safetensors":
            check_safetensors(file)
    _check_tokenizer_files(path)
    with _failing_as("weights cannot be loaded: {error}"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, info = AutoModelForCausalLM.from_pretrained(
            str(path), config=config, dtype=torch.float32, output_loading_info=True
        )
    _check_loading_info(model, info)
    bad = [name for name, p in model.named_parameters() if not torch.isfinite(p).all()]
    if bad:
        raise CheckpointError(
            f"weights contain NaN or inf in {len(bad)} tensors (first: {bad[0]}); "
            "training diverged: lower the learning rate or submit an earlier checkpoint"
        )
    with _failing_as(
        "tokenizer cannot be loaded: {error}; save it with tokenizer.save_pretrained(path)"
    ):
        tokenizer = AutoTokenizer.from_pretrained(str(path))
    rows = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > rows:
        raise CheckpointError(
            f"the tokenizer has {len(tokenizer)} tokens but the embedding only {rows} rows; "
            "call model.resize_token_embeddings(len(tokenizer)) before saving"
        )


@contextlib.contextmanager
def _failing_as(problem: str) -> Iterator[None]:
    """Whatever a loader raises becomes a :class:`CheckpointError` saying ``problem``, its
    ``{error}`` the first line of the loader's message (transformers' are long)."""
    try:
        yield
    except Exception as exc:
        raise CheckpointError(problem.format(error=_first_line(exc))) from None


def _check_loading_info(model: Any, info: dict[str, Any]) -> None:
    tied = set(getattr(model, "_tied_weights_keys", None) or ())
    if isinstance(getattr(model, "_tied_weights_keys", None), dict):
        tied = set(model._tied_weights_keys)
    missing = [k for k in info.get("missing_keys", ()) if k not in tied]
    if missing:
        raise CheckpointError(
            f"the weights do not cover the model: {len(missing)} tensors missing (first: "
            f"{missing[0]}); config.json and the weights come from different models"
        )
    mismatched = info.get("mismatched_keys", ())
    if mismatched:
        first = mismatched[0]
        raise CheckpointError(
            f"tensor shapes do not match config.json: {len(mismatched)} mismatched (first: "
            f"{first}); save config and weights together with save_pretrained"
        )


def _adapter_config(adapter_dir: Path) -> dict[str, Any]:
    cfg_path = adapter_dir / "adapter_config.json"
    if not cfg_path.is_file():
        raise CheckpointError(
            f"{adapter_dir}: adapter_config.json missing; save the adapter with "
            "peft_model.save_pretrained(path)"
        )
    try:
        config = json.loads(cfg_path.read_text())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"adapter_config.json: not valid JSON ({_first_line(exc)})") from None
    if not isinstance(config, dict) or config.get("peft_type") != "LORA":
        found = config.get("peft_type") if isinstance(config, dict) else None
        raise CheckpointError(
            f"adapter_config.json: peft_type {found!r} is not supported; submit a LoRA "
            "adapter or a full model (merge_and_unload + save_pretrained)"
        )
    weights = [adapter_dir / n for n in ADAPTER_WEIGHTS if (adapter_dir / n).is_file()]
    if not weights:
        raise CheckpointError(
            "adapter weights missing: expected adapter_model.safetensors next to "
            "adapter_config.json (peft_model.save_pretrained writes both)"
        )
    if weights[0].suffix == ".safetensors":
        check_safetensors(weights[0])
    return config


def _declared_dtype(model_dir: Path) -> str | None:
    """The dtype config.json declares (``dtype``, or ``torch_dtype`` in older files)."""
    try:
        config = json.loads((model_dir / "config.json").read_text())
    except (OSError, ValueError):
        return None
    value = config.get("dtype") or config.get("torch_dtype")
    return value if isinstance(value, str) else None


def _peft_model_class(task_type: str | None, default: Any) -> Any:
    """The PeftModel subclass ``PeftModel.from_pretrained`` would pick (its module moved once)."""
    try:
        from peft.auto import MODEL_TYPE_TO_PEFT_MODEL_MAPPING
    except ImportError:  # older peft
        from peft.mapping import MODEL_TYPE_TO_PEFT_MODEL_MAPPING
    return MODEL_TYPE_TO_PEFT_MODEL_MAPPING.get(task_type, default)


def merge_lora(adapter_dir: Path, base_dir: Path, out_dir: Path) -> Path:
    """Apply a LoRA adapter to the base model, merge it, save a full model + tokenizer.

    The tokenizer comes from the adapter directory when it holds one (an agent may add
    tokens), else from the base. Weights are merged in fp32 and saved in the base's dtype.
    """
    import torch
    from peft import PeftConfig, PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    adapter_dir, base_dir, out_dir = Path(adapter_dir), Path(base_dir), Path(out_dir)
    _adapter_config(adapter_dir)
    has_tokenizer = (adapter_dir / "tokenizer_config.json").is_file()
    tokenizer = AutoTokenizer.from_pretrained(str(adapter_dir if has_tokenizer else base_dir))
    base = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    saved_dtype = _declared_dtype(base_dir)
    rows = base.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > rows:
        base.resize_token_embeddings(len(tokenizer))
    try:
        config = PeftConfig.from_pretrained(str(adapter_dir))
        cls = _peft_model_class(config.task_type, PeftModel)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = cls(base, config, "default")
            result = model.load_adapter(str(adapter_dir), "default")
    except Exception as exc:
        raise CheckpointError(
            f"the LoRA adapter does not fit the base model ({_first_line(exc)}); train it on "
            "models/base with the same target_modules"
        ) from None
    unexpected = [k for k in result.unexpected_keys if "lora_" in k]
    missing = list(result.missing_keys)
    if unexpected or missing:
        what = unexpected[:1] or missing[:1]
        raise CheckpointError(
            f"the LoRA adapter does not fit the base model: {len(unexpected)} adapter tensors "
            f"have no place in it and {len(missing)} are missing (first: {what[0]}); was it "
            "trained on another architecture? Train it on models/base"
        )
    merged = model.merge_and_unload()
    if saved_dtype in ("bfloat16", "float16"):
        merged = merged.to(getattr(torch, saved_dtype))
    out_dir.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(str(out_dir), safe_serialization=True)
    tokenizer.save_pretrained(str(out_dir))
    return out_dir
