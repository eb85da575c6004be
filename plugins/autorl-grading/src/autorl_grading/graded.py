"""What the grader evaluates for a submission: the submitted tensors, in the base model's frame.

A submission is weights. The agent's checkpoint directory also holds a config, a tokenizer, a
chat template and a generation config, and each of those would let it choose how it is graded: a
template that raises the held-out question into an error, a generation config with beam search
and a minimum length, an index that points the loader at other files than the ones fingerprinted.
So the grader builds a *graded directory* of its own for every submission: the base model's
config, tokenizer, chat template and generation config, plus exactly the weight files chosen by
:func:`weight_files` (the same files the fingerprint hashes), under names and an index the harness
writes. Nothing else of the checkpoint is read by the evaluator.

``tokenizer = "own"`` (``[grader] tokenizer``, for agents that add tokens) takes the tokenizer
files (and with them the chat template) from the checkpoint, and lets ``vocab_size`` follow them;
it is recorded in the manifest and the report.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from autorl.errors import CheckpointError
from autorl.types import TOKENIZER_FILE_NAMES

SAFE_NAME = "model.safetensors"
SAFE_INDEX = "model.safetensors.index.json"
BIN_NAME = "pytorch_model.bin"
BIN_INDEX = "pytorch_model.bin.index.json"
ADAPTER_NAMES = ("adapter_model.safetensors", "adapter_model.bin")
WEIGHT_SUFFIXES = {".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt", ".h5", ".msgpack"}
INDEX_NAMES = {SAFE_INDEX, BIN_INDEX}
CONFIG_NOISE = {
    "_name_or_path",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "use_cache",
    "_commit_hash",
    "output_attentions",
    "output_hidden_states",
    "return_dict",
}
"""config.json keys a save may change without changing the architecture (the dtype the weights
were saved in, the library's version): ignored when comparing with the base's."""
MAX_JSON_BYTES = 4 * 1024**2
TOKENIZER_MODES = ("base", "own")


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _json(path: Path, what: str) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            raise CheckpointError(f"{path.name} is larger than any real one; {what}")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raise CheckpointError(f"{path.name}: not valid JSON; {what}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path.name}: expected a JSON object; {what}")
    return data


def _index_shards(directory: Path, name: str, suffix: str) -> list[Path]:
    """The shard files an index names, each a plain file name of ``directory``."""
    weight_map = _json(directory / name, "re-save the model with save_pretrained").get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{name}: no weight_map; re-save the model with save_pretrained")
    shards = set()
    for shard in weight_map.values():
        if (
            not isinstance(shard, str)
            or not shard
            or Path(shard).name != shard
            or not shard.endswith(suffix)
        ):
            raise CheckpointError(
                f"{name}: weight_map must name {suffix} files of the checkpoint directory "
                f"(e.g. model-00001-of-00002{suffix}); re-save the model"
            )
        shards.add(shard)
    missing = sorted(s for s in shards if not (directory / s).is_file())
    if missing:
        shown = ", ".join(_short(s) for s in missing[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise CheckpointError(f"sharded checkpoint is missing {shown}{more} (named in {name})")
    return [directory / s for s in sorted(shards)]


def is_adapter(directory: Path) -> bool:
    return (directory / "adapter_config.json").is_file()


def weight_files(directory: Path) -> list[Path]:
    """The weight files a checkpoint is graded on, by one rule the fingerprint shares.

    ``model.safetensors``; else the shards ``model.safetensors.index.json`` names; else every
    top-level ``*.safetensors`` (whatever its name); else ``pytorch_model.bin``, the shards of
    its index, or a single ``*.bin``. For a LoRA adapter, ``adapter_model.safetensors`` (or
    ``.bin``). Files outside this list are never loaded, so they cannot be a decoy.
    """
    directory = Path(directory)
    if is_adapter(directory):
        for name in ADAPTER_NAMES:
            if (directory / name).is_file():
                return [directory / name]
        return []
    if (directory / SAFE_NAME).is_file():
        return [directory / SAFE_NAME]
    if (directory / SAFE_INDEX).is_file():
        return _index_shards(directory, SAFE_INDEX, ".safetensors")
    found = sorted(p for p in directory.glob("*.safetensors") if p.is_file())
    if found:
        return found
    if (directory / BIN_NAME).is_file():
        return [directory / BIN_NAME]
    if (directory / BIN_INDEX).is_file():
        return _index_shards(directory, BIN_INDEX, ".bin")
    found = sorted(p for p in directory.glob("*.bin") if p.is_file())
    if len(found) > 1:
        raise CheckpointError(
            f"{len(found)} .bin weight files and no {BIN_INDEX}: save with "
            "model.save_pretrained(path) (safetensors) so the weights are one set"
        )
    return found


# the config ------------------------------------------------------------------------------------


def check_config(checkpoint: Path, base: Path, *, tokenizer: str = "base") -> None:
    """Refuse a ``config.json`` that would change the base model's architecture.

    The grader never loads the checkpoint's config (it uses the base's), so this is a clear
    refusal of weights built for another model, and of remote code, not the defence itself.
    ``vocab_size`` may follow the checkpoint's own tokenizer when ``tokenizer = "own"``.
    """
    path = checkpoint / "config.json"
    if not path.is_file() or is_adapter(checkpoint):
        return
    mine = _json(path, "write it with model.save_pretrained")
    theirs = _json(base / "config.json", "the base model's config is unreadable")
    if "auto_map" in mine or mine.get("trust_remote_code"):
        raise CheckpointError(
            "config_changes_architecture: config.json asks for remote code (auto_map): the grader "
            "loads the weights into the base model's architecture only; save the model with "
            "save_pretrained from models/base"
        )
    allowed = set(CONFIG_NOISE) | ({"vocab_size"} if tokenizer == "own" else set())
    changed = sorted(
        key
        for key in mine
        if key not in allowed and (key not in theirs or mine[key] != theirs[key])
    )
    if changed:
        shown = ", ".join(_short(k, 40) for k in changed[:5])
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        raise CheckpointError(
            f"config_changes_architecture: config.json differs from the base model's in {shown}"
            f"{more}: a submission is weights for the base model's architecture; train from "
            "models/base and save with save_pretrained (the grader uses the base's config, "
            "tokenizer, chat template and generation config)"
        )


# assembling -------------------------------------------------------------------------------------


def _link(src: Path, dst: Path) -> None:
    """Hard link (same file system: no copy of a multi-GB file), else copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _safetensors_index(files: list[Path], names: list[str]) -> dict[str, Any]:
    from autorl_grading.checkpoints import safetensors_tensors

    weight_map: dict[str, str] = {}
    total = 0
    for path, name in zip(files, names, strict=True):
        for tensor, size in safetensors_tensors(path):
            weight_map[tensor] = name
            total += size
    return {
        "metadata": {"total_size": total, "autorl": "written by the grader"},
        "weight_map": (dict(sorted(weight_map.items()))),
    }


def _bin_index(directory: Path, renamed: dict[str, str]) -> dict[str, Any]:
    weight_map = _json(directory / BIN_INDEX, "re-save the model")["weight_map"]
    return {
        "metadata": {"autorl": "written by the grader"},
        "weight_map": {str(k): renamed[v] for k, v in sorted(weight_map.items())},
    }


def _base_files(base: Path, skip_tokenizer: bool) -> list[Path]:
    """The base model's own non-weight files (config, tokenizer, templates, generation config)."""
    out = []
    for path in sorted(base.iterdir()):
        name = path.name
        if not path.is_file() or path.suffix.lower() in WEIGHT_SUFFIXES or name in INDEX_NAMES:
            continue
        if skip_tokenizer and name in TOKENIZER_FILE_NAMES:
            continue
        out.append(path)
    return out


def assemble(
    checkpoint_dir: Path, base_dir: Path, out_dir: Path, *, tokenizer: str = "base"
) -> Path:
    """Build the graded directory ``out_dir`` for the (already copied and validated) checkpoint.

    Full models: the base's files but for its weights, the checkpoint's weight files (by
    :func:`weight_files`) hard-linked as ``model.safetensors`` or ``model-0000i-of-0000n`` with
    an index written here from their headers. Adapters: ``adapter_config.json`` (re-written from
    its parsed JSON) and the adapter weights; the base is merged in by the model layer, with its
    tokenizer. ``tokenizer = "own"``: the checkpoint's tokenizer files instead of the base's.
    """
    if tokenizer not in TOKENIZER_MODES:
        raise ValueError(f"tokenizer mode {tokenizer!r}: use one of {TOKENIZER_MODES}")
    checkpoint_dir, base_dir, out_dir = Path(checkpoint_dir), Path(base_dir), Path(out_dir)
    own = tokenizer == "own"
    files = weight_files(checkpoint_dir)
    if not files:
        raise CheckpointError("no weights: save the model with model.save_pretrained(path)")
    out_dir.mkdir(parents=True, exist_ok=False)
    if own:
        for name in sorted(TOKENIZER_FILE_NAMES):
            if (checkpoint_dir / name).is_file():
                shutil.copyfile(checkpoint_dir / name, out_dir / name)
    if is_adapter(checkpoint_dir):
        config = _json(
            checkpoint_dir / "adapter_config.json", "save with PeftModel.save_pretrained"
        )
        (out_dir / "adapter_config.json").write_text(json.dumps(config, indent=1))
        _link(files[0], out_dir / files[0].name)
        return out_dir
    for path in _base_files(base_dir, skip_tokenizer=own):
        shutil.copyfile(path, out_dir / path.name)
    if own:  # the embedding may have grown with the agent's tokens
        config = _json(out_dir / "config.json", "the base model's config is unreadable")
        vocab = _json(checkpoint_dir / "config.json", "save the model").get("vocab_size")
        if isinstance(vocab, int) and not isinstance(vocab, bool) and vocab > 0:
            config["vocab_size"] = vocab
        (out_dir / "config.json").write_text(json.dumps(config, indent=2))
    n = len(files)
    if files[0].suffix == ".safetensors":
        names = (
            [SAFE_NAME]
            if n == 1
            else [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
        )
        for src, name in zip(files, names, strict=True):
            _link(src, out_dir / name)
        if n > 1:
            (out_dir / SAFE_INDEX).write_text(json.dumps(_safetensors_index(files, names)))
        return out_dir
    if n == 1:
        _link(files[0], out_dir / BIN_NAME)
        return out_dir
    renamed = {p.name: f"pytorch_model-{i:05d}-of-{n:05d}.bin" for i, p in enumerate(files, 1)}
    for src in files:
        _link(src, out_dir / renamed[src.name])
    (out_dir / BIN_INDEX).write_text(json.dumps(_bin_index(checkpoint_dir, renamed)))
    return out_dir
