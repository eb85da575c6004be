"""Copying a checkpoint out of a workspace the agent still controls: size, holes, confinement.

Real files and real races: the agent side is played by the test itself between two steps of the
copy, and by a separate process swapping files while copies run.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from autorl_grading.checkpoints import (
    MAX_DEPTH,
    MAX_FILES,
    CheckpointError,
    _open_confined,
    _plan,
    check_safetensors,
    copy_checkpoint,
    validate,
)
from autorl_testing.checkpoints import write_checkpoint
from autorl_testing.grading import write_sparse_checkpoint

GiB = 1024**3
SECRET = b"SECRET-OUTSIDE-THE-WORKSPACE"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "output").mkdir(parents=True)
    return tmp_path / "ws"


def test_an_oversized_checkpoint_is_refused_before_anything_is_copied(ws: Path) -> None:
    source = write_sparse_checkpoint(ws / "output" / "v1", 10 * GiB)
    dest = ws.parent / "store" / "1" / "checkpoint"
    started = time.monotonic()
    with pytest.raises(CheckpointError) as info:
        copy_checkpoint(source, dest, ws, max_bytes=4 * 2**20 + 256 * 2**20, base_bytes=2**20)
    assert time.monotonic() - started < 5  # reading 10 GiB would take far longer
    assert str(info.value).startswith(
        "checkpoint is 10.0 GiB, far larger than the base model (1.0 MiB): limit 260.0 MiB"
    )
    assert not dest.exists()


def test_the_default_cap_applies_without_a_limit(ws: Path) -> None:
    source = write_sparse_checkpoint(ws / "output" / "v1", 41 * GiB)
    with pytest.raises(CheckpointError, match=r"checkpoint is 41\.0 GiB: limit 40\.0 GiB"):
        copy_checkpoint(source, ws.parent / "dest", ws)


def test_a_sparse_file_stays_sparse_and_its_data_is_copied(ws: Path) -> None:
    source = write_sparse_checkpoint(ws / "output" / "v1", 2 * GiB)
    weights = source / "model.safetensors"
    with weights.open("r+b") as fh:  # data in the middle of the hole, too
        fh.seek(GiB)
        fh.write(b"middle" * 1000)
    if weights.stat().st_blocks * 512 > 2**20:
        pytest.skip("this filesystem does not keep holes")
    dest = ws.parent / "dest"
    started = time.monotonic()
    copy_checkpoint(source, dest, ws)
    elapsed = time.monotonic() - started
    copied = dest / "model.safetensors"
    assert copied.stat().st_size == weights.stat().st_size
    assert copied.stat().st_blocks * 512 < 2**20, "the hole became real bytes"
    with copied.open("rb") as fh:
        head = fh.read(4096)
        fh.seek(GiB)
        middle = fh.read(6000)
        fh.seek(GiB + 6000)
        after = fh.read(4096)
    with weights.open("rb") as fh:
        assert head == fh.read(4096)
    assert middle == b"middle" * 1000 and after == bytes(4096)
    assert elapsed < 5  # the hole is skipped, not read (st_blocks above: not written)
    check_safetensors(copied)


def test_links_inside_the_workspace_are_copied_and_links_out_are_refused(
    ws: Path, tmp_path: Path
) -> None:
    stash = write_checkpoint(ws / "code" / "stash", seed=3)
    ckpt = ws / "output" / "v1"
    ckpt.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        os.symlink(stash / name, ckpt / name)
    copy_checkpoint(ckpt, tmp_path / "ok", ws)
    assert (tmp_path / "ok" / "model.safetensors").read_bytes() == (
        stash / "model.safetensors"
    ).read_bytes()
    assert not (tmp_path / "ok" / "model.safetensors").is_symlink()
    (tmp_path / "secret.json").write_bytes(SECRET)
    os.symlink(tmp_path / "secret.json", ckpt / "extra.json")
    with pytest.raises(CheckpointError, match=r"extra\.json links to .*outside the workspace"):
        copy_checkpoint(ckpt, tmp_path / "bad", ws)


def test_a_fifo_is_refused_at_once(ws: Path, tmp_path: Path) -> None:
    ckpt = write_checkpoint(ws / "output" / "v1")
    os.mkfifo(ckpt / "vocab.txt")  # opening it for reading would block until a writer came
    started = time.monotonic()
    with pytest.raises(CheckpointError, match=r"vocab\.txt' is a named pipe \(FIFO\)"):
        copy_checkpoint(ckpt, tmp_path / "dest", ws)
    assert time.monotonic() - started < 10  # opening the FIFO would block for ever


def test_a_device_is_refused(ws: Path, tmp_path: Path) -> None:
    ckpt = write_checkpoint(ws / "output" / "v1")
    try:
        os.mknod(ckpt / "vocab.txt", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # like /dev/zero
    except (PermissionError, OSError):
        pytest.skip("creating a device node needs privileges this machine does not give")
    with pytest.raises(CheckpointError, match="is a character device, not a regular file"):
        copy_checkpoint(ckpt, tmp_path / "dest", ws)


def test_a_file_swapped_for_a_link_between_check_and_open_is_refused(
    ws: Path, tmp_path: Path
) -> None:
    ckpt = write_checkpoint(ws / "output" / "v1")
    (tmp_path / "secret.safetensors").write_bytes(SECRET)
    root = ws.resolve()
    planned = {str(p.rel): p for p in _plan(ckpt, root)}
    weights = ckpt / "model.safetensors"
    weights.unlink()  # the agent acts after the check ...
    os.symlink(tmp_path / "secret.safetensors", weights)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:  # ... and before the open
        with pytest.raises(CheckpointError, match="changed while it was being copied"):
            _open_confined(root_fd, root, planned["model.safetensors"])
    finally:
        os.close(root_fd)


def test_a_directory_swapped_for_a_link_to_outside_is_refused(ws: Path, tmp_path: Path) -> None:
    inner = write_checkpoint(ws / "output" / "v1" / "sub")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "model.safetensors").write_bytes(SECRET)
    root = ws.resolve()
    planned = {str(p.rel): p for p in _plan(ws / "output" / "v1", root)}
    inner.rename(tmp_path / "moved")
    os.symlink(outside, inner)  # same path, now through a link out of the workspace
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(CheckpointError, match="changed while it was being copied"):
            _open_confined(root_fd, root, planned["sub/model.safetensors"])
    finally:
        os.close(root_fd)


def test_a_fifo_swapped_in_after_the_check_is_refused_without_blocking(ws: Path) -> None:
    ckpt = write_checkpoint(ws / "output" / "v1")
    root = ws.resolve()
    planned = {str(p.rel): p for p in _plan(ckpt, root)}
    (ckpt / "tokenizer.json").unlink()
    os.mkfifo(ckpt / "tokenizer.json")
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    started = time.monotonic()
    try:
        with pytest.raises(CheckpointError, match=r"is a named pipe \(FIFO\)"):
            _open_confined(root_fd, root, planned["tokenizer.json"])
    finally:
        os.close(root_fd)
    assert time.monotonic() - started < 10  # opening the FIFO would block for ever


SWAPPER = """
import os, sys
ckpt, stash, secret = sys.argv[1:4]
target = os.path.join(ckpt, "model.safetensors")
while True:
    os.symlink(secret, os.path.join(ckpt, "tmp-link"))
    os.replace(os.path.join(ckpt, "tmp-link"), target)
    os.link(stash, os.path.join(ckpt, "tmp-file"))
    os.replace(os.path.join(ckpt, "tmp-file"), target)
"""


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_a_process_swapping_files_during_copies_never_gets_an_outside_file_copied(
    ws: Path, tmp_path: Path
) -> None:
    ckpt = write_checkpoint(ws / "output" / "v1")
    stash = ws / "code" / "stash.safetensors"
    stash.parent.mkdir()
    os.link(ckpt / "model.safetensors", stash)
    secret = tmp_path / "secret.safetensors"
    secret.write_bytes(SECRET)
    agent = subprocess.Popen([sys.executable, "-c", SWAPPER, str(ckpt), str(stash), str(secret)])
    outcomes = {"copied": 0, "outside": 0, "changed": 0}
    started = time.monotonic()
    try:
        i = 0
        while time.monotonic() - started < 20 and agent.poll() is None:
            if outcomes["copied"] and outcomes["outside"] and outcomes["changed"] > 5:
                break  # every way the race can end has been seen
            i += 1
            dest = tmp_path / "copies" / str(i)
            try:
                copy_checkpoint(ckpt, dest, ws)
            except CheckpointError as exc:
                outcomes["outside" if "outside the workspace" in str(exc) else "changed"] += 1
                continue
            assert (dest / "model.safetensors").read_bytes() == stash.read_bytes()
            outcomes["copied"] += 1
    finally:
        agent.kill()
        agent.wait(10)
    print(f"swap race outcomes over {i} copies: {outcomes}")
    assert agent.returncode == -9, "the swapping process died on its own"
    assert outcomes["copied"] and outcomes["outside"] and outcomes["changed"]
    assert not any(SECRET in p.read_bytes() for p in (tmp_path / "copies").rglob("*.safetensors"))


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_too_many_files_are_refused(ws: Path, tmp_path: Path) -> None:
    ckpt = write_checkpoint(ws / "output" / "v1")
    junk = ckpt / "junk"
    junk.mkdir()
    for i in range(MAX_FILES):
        (junk / str(i)).touch()
    with pytest.raises(CheckpointError, match=f"more than {MAX_FILES} files"):
        copy_checkpoint(ckpt, tmp_path / "dest", ws)
    assert not (tmp_path / "dest").exists()


def test_too_deep_a_tree_is_refused(ws: Path, tmp_path: Path) -> None:
    ckpt = write_checkpoint(ws / "output" / "v1")
    (ckpt / "/".join(["d"] * (MAX_DEPTH + 1))).mkdir(parents=True)
    with pytest.raises(CheckpointError, match=f"more than {MAX_DEPTH} levels deep"):
        copy_checkpoint(ckpt, tmp_path / "dest", ws)


def test_an_index_naming_files_outside_the_checkpoint_is_refused(tmp_path: Path) -> None:
    ckpt = write_checkpoint(tmp_path / "v1")
    index = {"weight_map": {"w": "../../../etc/passwd"}}
    (ckpt / "model.safetensors.index.json").write_text(json.dumps(index))
    # beside model.safetensors the index is never read: that file is what is graded
    assert validate(ckpt).weight_files == ("model.safetensors",)
    (ckpt / "model.safetensors").rename(ckpt / "w.safetensors")
    with pytest.raises(CheckpointError, match=r"weight_map must name \.safetensors files"):
        validate(ckpt)
