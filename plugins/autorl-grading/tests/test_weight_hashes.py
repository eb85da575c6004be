"""What identifies "the same weights" (tensor content) and "the same base model" (every file)."""

from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from autorl_grading.checkpoints import (
    CheckpointError,
    hash_tree,
    hash_weights,
    tensor_hash,
    validate,
)
from autorl_testing.checkpoints import write_checkpoint
from safetensors.numpy import save_file

TENSORS = {
    "model.embed.weight": np.arange(24, dtype="float32").reshape(4, 6),
    "model.norm.weight": np.ones(6, dtype="float32"),
    "lm_head.weight": np.linspace(-1, 1, 12, dtype="float32").reshape(2, 6),
}


def model_dir(path: Path, tensors: dict | None = None, metadata: dict | None = None) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    (path / "tokenizer.json").write_text("{}")
    save_file(tensors or TENSORS, str(path / "model.safetensors"), metadata=metadata)
    return path


def rewrite_header(path: Path, edit) -> None:
    """Rewrite a safetensors header in place, keeping the tensors' bytes."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = edit(json.loads(raw[8 : 8 + n]))
    blob = header.encode() if isinstance(header, str) else json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + raw[8 + n :])


def test_new_metadata_key_order_and_whitespace_keep_the_hash(tmp_path: Path) -> None:
    base = hash_weights(model_dir(tmp_path / "base", metadata={"format": "pt"}))
    other = model_dir(tmp_path / "other", metadata={"format": "pt", "note": "trained for days"})
    assert hash_weights(other) == base
    weights = other / "model.safetensors"
    rewrite_header(weights, lambda h: {k: h[k] for k in sorted(h, reverse=True)})
    rewrite_header(weights, lambda h: json.dumps(h, indent=4))
    rewrite_header(weights, lambda h: {k: v for k, v in h.items() if k != "__metadata__"})
    assert hash_weights(other) == base
    assert validate(other).weight_hash == base


def test_resharding_keeps_the_hash(tmp_path: Path) -> None:
    one = model_dir(tmp_path / "one")
    two = tmp_path / "two"
    two.mkdir()
    names = sorted(TENSORS)
    shards = {
        "model-00001-of-00002.safetensors": names[:1],
        "model-00002-of-00002.safetensors": names[1:],
    }
    for shard, keys in shards.items():
        save_file({k: TENSORS[k] for k in keys}, str(two / shard), metadata={"shard": shard})
    weight_map = {k: shard for shard, keys in shards.items() for k in keys}
    (two / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (two / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    (two / "tokenizer.json").write_text("{}")
    assert validate(two).weight_files == tuple(shards)
    assert hash_weights(two) == hash_weights(one)


def test_one_flipped_byte_dtype_shape_or_name_changes_the_hash(tmp_path: Path) -> None:
    base = hash_weights(model_dir(tmp_path / "base"))
    flipped = model_dir(tmp_path / "flipped")
    raw = bytearray((flipped / "model.safetensors").read_bytes())
    raw[-1] ^= 0x01
    (flipped / "model.safetensors").write_bytes(bytes(raw))
    reshaped = model_dir(tmp_path / "reshaped")
    rewrite_header(
        reshaped / "model.safetensors",
        lambda h: {**h, "lm_head.weight": {**h["lm_head.weight"], "shape": [6, 2]}},
    )
    retyped = model_dir(tmp_path / "retyped")
    rewrite_header(
        retyped / "model.safetensors",
        lambda h: {**h, "model.norm.weight": {**h["model.norm.weight"], "dtype": "I32"}},
    )
    renamed = model_dir(
        tmp_path / "renamed",
        {("lm_head.w" if k == "lm_head.weight" else k): v for k, v in TENSORS.items()},
    )
    hashes = [hash_weights(p) for p in (flipped, reshaped, retyped, renamed)]
    assert base not in hashes and len(set(hashes)) == 4


def test_a_tensor_saved_twice_across_shards_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    save_file({"w": np.zeros(2, dtype="float32")}, str(d / "model-1.safetensors"))
    save_file({"w": np.ones(2, dtype="float32")}, str(d / "model-2.safetensors"))
    with pytest.raises(CheckpointError, match="tensor 'w' is in both"):
        tensor_hash(d)


def test_a_header_with_duplicate_keys_or_bad_offsets_is_refused(tmp_path: Path) -> None:
    d = model_dir(tmp_path / "dup")
    rewrite_header(
        d / "model.safetensors",
        lambda h: (
            json.dumps(h)[:-1] + ', "lm_head.weight": ' + json.dumps(h["lm_head.weight"]) + "}"
        ),
    )
    with pytest.raises(CheckpointError, match=r"duplicate key 'lm_head\.weight'"):
        validate(d)
    d = model_dir(tmp_path / "offsets")
    rewrite_header(
        d / "model.safetensors",
        lambda h: {**h, "lm_head.weight": {**h["lm_head.weight"], "data_offsets": [40, 8]}},
    )
    with pytest.raises(CheckpointError, match="malformed entry"):
        validate(d)


def test_bin_weights_are_hashed_by_bytes(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.mkdir()
    (a / "pytorch_model.bin").write_bytes(b"pickle bytes")
    (a / "model.bin").write_bytes(b"pickle bytes")
    b = tmp_path / "b"
    b.mkdir()
    (b / "model.bin").write_bytes(b"pickle bytes")
    first = tensor_hash(a, [a / "model.bin"])
    assert first == tensor_hash(b) and first.startswith("sha256:")
    (b / "model.bin").write_bytes(b"pickle bytez")
    assert tensor_hash(b) != first


def test_hash_tree_sees_every_file_of_the_base_model(tmp_path: Path) -> None:
    base = write_checkpoint(tmp_path / "base")
    before = hash_tree(base)
    assert hash_tree(base) == before
    config = json.loads((base / "config.json").read_text())
    (base / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModel": "x.Y"}}))
    assert hash_tree(base) != before  # same weights: hash_weights cannot see it
    (base / "config.json").write_text(json.dumps(config))
    assert hash_tree(base) == before
    (base / "extra.py").write_text("import os")
    assert hash_tree(base) != before
    (base / "extra.py").unlink()
    (base / "tokenizer.json").rename(base / "tokenizer2.json")
    assert hash_tree(base) != before


def test_hash_tree_never_follows_a_link_out_of_the_tree_nor_waits_on_a_fifo(
    tmp_path: Path,
) -> None:
    base = write_checkpoint(tmp_path / "base")
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    os.symlink(outside, base / "link.json")
    os.symlink("config.json", base / "inner.json")
    os.mkfifo(base / "pipe")
    started = time.monotonic()
    before = hash_tree(base)
    assert time.monotonic() - started < 10  # opening the FIFO would block for ever
    outside.write_text('{"changed": true}')
    assert hash_tree(base) == before  # not read: only the link's text counts
    assert hash_tree(base, follow_links_within=tmp_path) != before  # a hub cache's blobs
    (base / "config.json").write_text('{"model_type": "llama"}')
    assert hash_tree(base) != before
    current = hash_tree(base)
    (base / "link.json").unlink()
    os.symlink(tmp_path / "elsewhere.json", base / "link.json")
    assert hash_tree(base) != current  # where a link points is part of the tree
