"""Checkpoint intake without torch: confine the path, copy, validate the files, hash the weights.

The harness copies what it needs out of the workspace *before* validating and evaluating, so the
agent cannot swap files between the check and the evaluation. Only model files are copied
(configs, weights, tokenizer files): never code, so ``trust_remote_code`` is never needed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

COPIED_SUFFIXES = {
    ".json",
    ".safetensors",
    ".bin",
    ".model",
    ".txt",
    ".jinja",
    ".tiktoken",
}
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer.model",
    "vocab.json",
    "vocab.txt",
    "spiece.model",
)
MAX_CHECKPOINT_BYTES = 40 * 1024**3


class CheckpointError(Exception):
    """A submission cannot be accepted; the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class CheckpointInfo:
    kind: str
    """``full`` (a complete model) or ``lora`` (a PEFT adapter to merge onto the base)."""
    weight_files: tuple[str, ...]
    weight_hash: str


def confine(workspace: Path, output_dir: Path, model_path: str) -> Path:
    """Resolve ``model_path`` (relative to the workspace, symlinks followed) inside ``output/``."""
    if not model_path or "\x00" in model_path:
        raise CheckpointError("model_path is empty")
    candidate = Path(model_path)
    if not candidate.is_absolute():
        candidate = workspace / candidate
    resolved = candidate.resolve()
    root = output_dir.resolve()
    if resolved != root and root not in resolved.parents:
        raise CheckpointError(
            f"model_path {model_path!r} resolves to {resolved}, outside {root}: "
            "save checkpoints under output/ (e.g. output/v1) and submit that path"
        )
    if resolved == root:
        raise CheckpointError(
            "model_path must name a checkpoint directory inside output/, e.g. output/v1"
        )
    if not resolved.is_dir():
        raise CheckpointError(f"model_path {model_path!r}: no such directory under output/")
    return resolved


def copy_checkpoint(source: Path, dest: Path, workspace: Path) -> None:
    """Copy model files (following links that stay inside the workspace) into harness storage."""
    root = workspace.resolve()
    total = 0
    dest.mkdir(parents=True, exist_ok=False)
    for path in sorted(source.rglob("*")):
        if path.is_dir() or path.suffix.lower() not in COPIED_SUFFIXES:
            continue
        real = path.resolve()
        if root not in real.parents:
            raise CheckpointError(
                f"{path.relative_to(source)} links to {real}, outside the workspace: "
                "checkpoints may only contain files from the workspace"
            )
        total += real.stat().st_size
        if total > MAX_CHECKPOINT_BYTES:
            raise CheckpointError("checkpoint is larger than 40 GiB; submit model files only")
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(real, target)


def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path.name}: not valid JSON ({exc}); {what}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path.name}: expected a JSON object; {what}")
    return data


def check_safetensors(path: Path) -> None:
    """Cheap integrity check: the header parses and the file holds every tensor's bytes."""
    size = path.stat().st_size
    try:
        with path.open("rb") as fh:
            (header_len,) = struct.unpack("<Q", fh.read(8))
            if header_len > size - 8 or header_len > 100 * 1024**2:
                raise ValueError("header length beyond the end of the file")
            header = json.loads(fh.read(header_len))
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(
            f"{path.name}: not a valid safetensors file ({exc}); save with save_pretrained"
        ) from None
    end = max(
        (t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"),
        default=0,
    )
    if 8 + header_len + end > size:
        raise CheckpointError(
            f"{path.name}: truncated ({size} bytes, the header promises {8 + header_len + end})"
        )


def _weights(directory: Path, stem: str) -> list[Path]:
    files = sorted(directory.glob(f"{stem}*.safetensors")) or sorted(
        directory.glob("*.safetensors")
    )
    if not files:
        files = sorted(directory.glob(f"{stem}*.bin"))
    return files


def hash_files(files: list[Path], base: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(path.relative_to(base)).encode() + b"\0")
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return "sha256:" + digest.hexdigest()


def hash_weights(directory: Path) -> str:
    """Hash of a model directory's weight files (what identifies "the same weights")."""
    files = _weights(directory, "model") or _weights(directory, "adapter_model")
    return hash_files(files, directory)


def validate(directory: Path) -> CheckpointInfo:
    """Check a copied checkpoint; raise CheckpointError with a precise, fixable message."""
    adapter_cfg = directory / "adapter_config.json"
    if adapter_cfg.exists():
        cfg = _read_json(adapter_cfg, "write it with PeftModel.save_pretrained")
        if "peft_type" not in cfg:
            raise CheckpointError("adapter_config.json has no 'peft_type': is this a PEFT adapter?")
        files = _weights(directory, "adapter_model")
        if not files:
            raise CheckpointError(
                "LoRA adapter without weights: expected adapter_model.safetensors next to "
                "adapter_config.json (PeftModel.save_pretrained writes both)"
            )
        kind = "lora"
    else:
        if not (directory / "config.json").exists():
            raise CheckpointError(
                "config.json missing: submit a directory written by model.save_pretrained(...) "
                "(or a PEFT adapter directory with adapter_config.json)"
            )
        cfg = _read_json(directory / "config.json", "write it with model.save_pretrained")
        if "model_type" not in cfg:
            raise CheckpointError("config.json has no 'model_type': not a transformers config")
        files = _weights(directory, "model")
        if not files:
            raise CheckpointError(
                "no weights: expected model.safetensors (or sharded model-0000x-of-0000y."
                "safetensors); save with model.save_pretrained(path)"
            )
        index = directory / "model.safetensors.index.json"
        if index.exists():
            shards = set(_read_json(index, "re-save the model").get("weight_map", {}).values())
            missing = sorted(s for s in shards if not (directory / s).exists())
            if missing:
                raise CheckpointError(f"sharded checkpoint is missing {', '.join(missing)}")
        if not any((directory / name).exists() for name in TOKENIZER_FILES):
            raise CheckpointError(
                "tokenizer missing: save it next to the model with tokenizer.save_pretrained(path)"
            )
        kind = "full"
    for path in files:
        if path.suffix == ".safetensors":
            check_safetensors(path)
    return CheckpointInfo(kind, tuple(p.name for p in files), hash_files(files, directory))
