"""Checkpoint intake without torch: confine the path, copy, validate the files, hash the weights.

The harness copies what it needs out of the workspace *before* validating and evaluating, so the
agent cannot swap files between the check and the evaluation. Only model files are copied
(configs, weights, tokenizer files): never code, so ``trust_remote_code`` is never needed.

The agent keeps running while its checkpoint is copied, so every agent file is hostile data: the
size is checked before anything is copied, files are opened one path component at a time without
following links and checked again through the opened descriptor, holes stay holes, and only
regular files are read (a FIFO or a device is refused, never waited on).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import json
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from autorl import safetensors_header
from autorl.errors import CheckpointError
from autorl.types import TOKENIZER_VOCAB_FILES, CheckpointInfo

COPIED_SUFFIXES = {
    ".json",
    ".safetensors",
    ".bin",
    ".model",
    ".txt",
    ".jinja",
    ".tiktoken",
}
MiB = 1024**2
GiB = 1024**3
MAX_CHECKPOINT_BYTES = 40 * GiB
"""The size cap when the caller gives none (see ``checkpoint_size_limit``)."""
MAX_FILES = 10_000
"""Entries (files and directories) a checkpoint may hold: bounds the walk itself."""
MAX_DEPTH = 16
"""Directory levels below the checkpoint directory."""
MAX_HEADER_BYTES = 8 * MiB
"""A safetensors header is parsed holding the GIL (stalling the HTTP threads): real ones are
well under 2 MiB."""
MAX_JSON_BYTES = 4 * MiB
"""config.json, adapter_config.json, the shard index: real ones are a few KiB."""
BLOCK = 1 << 20

_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NO_SEEK_DATA = {errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS}
_CHANGED = {errno.ELOOP, errno.ENOTDIR, errno.ENOENT}
HARNESS_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
"""Errors of the harness's own resources (descriptors, memory), not of the checkpoint: raised
as they are, never turned into a verdict on the agent's files or into their fingerprint (the
grading service tries the intake again; an agent's socket flood can exhaust descriptors)."""


def _raise_if_harness(exc: OSError) -> None:
    if exc.errno in HARNESS_ERRNOS:
        raise exc


def confine(workspace: Path, output_dir: Path, model_path: str) -> Path:
    """Resolve ``model_path`` (relative to the workspace, symlinks followed) inside ``output/``."""
    if not model_path or "\x00" in model_path:
        raise CheckpointError("model_path is empty")
    candidate = Path(model_path)
    if not candidate.is_absolute():
        candidate = workspace / candidate
    resolved = _resolve(
        candidate,
        f"model_path {_short(model_path)} cannot be resolved (a symlink loop?): "
        "submit a checkpoint directory under output/",
    )
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


def _resolve(path: Path, problem: str) -> Path:
    """``path`` with its links followed; a link loop, or a link swapped while being resolved,
    is a :class:`CheckpointError` saying ``problem``."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        raise CheckpointError(problem) from None


# sizes ----------------------------------------------------------------------------------------


def checkpoint_size_limit(base_bytes: int) -> int:
    """The largest checkpoint worth copying for a base model of ``base_bytes``.

    4x covers an fp32 save of a bf16 base; 256 MiB covers tokenizer files and small models.
    """
    return 4 * base_bytes + 256 * MiB


def apparent_size(directory: Path) -> int:
    """Total size of the regular files under ``directory``, links followed (the base model's)."""
    total = 0
    for dirpath, _dirs, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):
                info = os.stat(os.path.join(dirpath, name))
                if stat.S_ISREG(info.st_mode):
                    total += info.st_size
    return total


def human_size(n: int) -> str:
    if n >= GiB:
        return f"{n / GiB:.1f} GiB"
    if n >= MiB:
        return f"{n / MiB:.1f} MiB"
    return f"{n} bytes"


def _check_size(total: int, limit: int, base_bytes: int | None) -> None:
    if total <= limit:
        return
    base = f", far larger than the base model ({human_size(base_bytes)})" if base_bytes else ""
    raise CheckpointError(
        f"checkpoint is {human_size(total)}{base}: limit {human_size(limit)}; submit one "
        "checkpoint's model files only (config, weights, tokenizer from save_pretrained)"
    )


# walking and opening agent files without following it anywhere ---------------------------------


def _short(text: str, limit: int = 80) -> str:
    """Agent-chosen names in messages are cut: a reason never carries a large input back."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _entries(directory: Path, source: Path, limit: int) -> list[os.DirEntry[str]]:
    """At most ``limit`` entries of ``directory``: a huge directory is never listed whole."""
    try:
        with os.scandir(directory) as entries:
            return list(itertools.islice(entries, limit))
    except OSError as exc:
        _raise_if_harness(exc)
        where = _short(str(directory.relative_to(source)))
        raise CheckpointError(f"cannot list {where} in the checkpoint: {exc.strerror}") from None


def _walk(source: Path) -> list[Path]:
    """Every entry under ``source`` that is not a directory (links to directories are not
    entered), refusing trees too large or too deep to be one model directory."""
    found: list[Path] = []
    stack = [(source, 0)]
    seen = 0
    while stack:
        directory, depth = stack.pop()
        for entry in _entries(directory, source, MAX_FILES + 1 - seen):
            seen += 1
            if seen > MAX_FILES:
                raise CheckpointError(
                    f"checkpoint holds more than {MAX_FILES} files and directories: submit one "
                    "model directory (config, weights, tokenizer), not a whole training tree"
                )
            if not entry.is_dir(follow_symlinks=False):
                found.append(Path(entry.path))
            elif depth + 1 > MAX_DEPTH:
                raise CheckpointError(
                    f"checkpoint nests directories more than {MAX_DEPTH} levels deep: "
                    "submit one model directory written by save_pretrained"
                )
            else:
                stack.append((Path(entry.path), depth + 1))
    return sorted(found)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _not_regular(rel: PurePath, mode: int) -> CheckpointError:
    return CheckpointError(
        f"{_short(str(rel))} is {_kind(mode)}, not a regular file: a checkpoint may only contain "
        "regular files (save_pretrained writes those)"
    )


def _changed(rel: PurePath) -> CheckpointError:
    return CheckpointError(
        f"{_short(str(rel))} changed while it was being copied (replaced, moved or turned into a "
        "link): submit a checkpoint you have finished writing"
    )


@dataclass(frozen=True)
class _Planned:
    rel: PurePath
    """Name inside the checkpoint."""
    real: Path
    """The file it resolves to, inside the workspace."""
    size: int


def _plan(source: Path, root: Path) -> list[_Planned]:
    """The model files to copy, each resolved inside the workspace and a regular file."""
    planned = []
    for path in _walk(source):
        if path.suffix.lower() not in COPIED_SUFFIXES:
            continue
        rel = path.relative_to(source)
        real = _resolve(
            path,
            f"{_short(str(rel))} is a symlink loop or changed while it was being copied: "
            "submit a checkpoint you have finished writing",
        )
        if not _inside(real, root):
            raise CheckpointError(
                f"{rel} links to {real}, outside the workspace: "
                "checkpoints may only contain files from the workspace"
            )
        try:
            info = os.stat(real)
        except OSError as exc:
            raise CheckpointError(
                f"{_short(str(rel))}: {exc.strerror} (a broken link?); "
                "submit a complete checkpoint directory"
            ) from None
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(rel, info.st_mode)
        planned.append(_Planned(rel, real, info.st_size))
    return planned


def _open_beneath(root_fd: int, root: Path, rel: PurePath) -> int:
    """Open ``rel`` under the directory ``root_fd`` one component at a time, following no link:
    swapping any directory or the file for a link fails the open instead of escaping."""
    if os.open not in os.supports_dir_fd:  # pragma: no cover - not Linux
        return os.open(root / rel, _FILE_FLAGS)
    fd = root_fd
    try:
        for part in rel.parts[:-1]:
            parent, fd = fd, os.open(part, _DIR_FLAGS, dir_fd=fd)
            if parent != root_fd:
                os.close(parent)
        return os.open(rel.parts[-1], _FILE_FLAGS, dir_fd=fd)
    finally:
        if fd != root_fd:
            os.close(fd)


def _opened_path(fd: int, real: Path, rel: PurePath) -> Path:
    """Where the opened file really is: /proc's view of the descriptor, or (without /proc) the
    resolved path, provided it still names the very file that was opened."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
    opened = os.fstat(fd)
    again = real.resolve()
    try:
        now = os.stat(again)
    except OSError:
        raise _changed(rel) from None
    if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
        raise _changed(rel)
    return again


def _open_confined(root_fd: int, root: Path, item: _Planned) -> tuple[int, os.stat_result]:
    """A descriptor on ``item``'s file, proven a regular file inside the workspace."""
    try:
        fd = _open_beneath(root_fd, root, item.real.relative_to(root))
    except OSError as exc:
        _raise_if_harness(exc)
        if exc.errno in _CHANGED:
            raise _changed(item.rel) from None
        raise CheckpointError(f"cannot open {_short(str(item.rel))}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(item.rel, info.st_mode)
        if not _inside(_opened_path(fd, item.real, item.rel), root):
            raise _changed(item.rel)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


# copying ----------------------------------------------------------------------------------------


def _data_ranges(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """The ranges of the file that hold data; all of it where the filesystem cannot tell."""
    if not hasattr(os, "SEEK_DATA"):  # pragma: no cover - not Linux
        yield 0, size
        return
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
            end = os.lseek(fd, start, os.SEEK_HOLE)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # nothing but a hole from pos on
                return
            if exc.errno in _NO_SEEK_DATA:
                yield pos, size
                return
            raise
        if start >= size:
            return
        end = min(end, size)
        yield start, end
        pos = end


def _copy_range(src: int, dst: int, start: int, end: int, rel: PurePath) -> None:
    while start < end:
        block = os.pread(src, min(BLOCK, end - start), start)
        if not block:
            raise _changed(rel)  # it shrank under us
        view = memoryview(block)
        while view:
            written = os.pwrite(dst, view, start)
            view, start = view[written:], start + written


def _copy_one(root_fd: int, root: Path, item: _Planned, target: Path, room: int) -> int:
    """Copy one file through a confined descriptor, holes kept; return its size."""
    fd, info = _open_confined(root_fd, root, item)
    try:
        if info.st_size > room:
            raise CheckpointError(
                f"{_short(str(item.rel))} grew while it was being copied, past the size limit: "
                "submit a checkpoint you have finished writing"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            for start, end in _data_ranges(fd, info.st_size):
                _copy_range(fd, out, start, end, item.rel)
            os.ftruncate(out, info.st_size)
        finally:
            os.close(out)
    finally:
        os.close(fd)
    return info.st_size


def copy_checkpoint(
    source: Path,
    dest: Path,
    workspace: Path,
    *,
    max_bytes: int | None = None,
    base_bytes: int | None = None,
) -> None:
    """Copy the model files of ``source`` into harness storage at ``dest``.

    Links are followed only to files inside the workspace. The total apparent size is checked
    against ``max_bytes`` (default ``MAX_CHECKPOINT_BYTES``) before anything is copied;
    ``base_bytes``, the base model's size, only makes the refusal clearer.
    """
    root = workspace.resolve()
    limit = MAX_CHECKPOINT_BYTES if max_bytes is None else max_bytes
    planned = _plan(source, root)
    _check_size(sum(item.size for item in planned), limit, base_bytes)
    dest.mkdir(parents=True, exist_ok=False)
    root_fd = os.open(root, _DIR_FLAGS)
    try:
        copied = 0
        for item in planned:
            copied += _copy_one(root_fd, root, item, dest / item.rel, limit - copied)
    finally:
        os.close(root_fd)


# validation -------------------------------------------------------------------------------------


def _read_json(path: Path, what: str) -> dict:
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        raise CheckpointError(
            f"{path.name} is {human_size(size)}, far larger than any real one "
            f"(limit {human_size(MAX_JSON_BYTES)}); {what}"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path.name}: not valid JSON ({exc}); {what}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path.name}: expected a JSON object; {what}")
    return data


@dataclass(frozen=True)
class _Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    path: Path
    start: int
    """Absolute offset of the tensor's bytes in ``path``."""
    end: int


def _header(path: Path) -> tuple[int, dict[str, Any]]:
    """(offset of the data section, parsed header) of a safetensors file."""
    try:
        return safetensors_header.read(path, MAX_HEADER_BYTES)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(
            f"{path.name}: not a valid safetensors file ({exc}); save with save_pretrained"
        ) from None


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _tensor(path: Path, data_start: int, name: str, entry: Any) -> _Tensor:
    try:
        dtype, shape, (start, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        ok = (
            isinstance(dtype, str)
            and isinstance(shape, list)
            and all(_is_count(d) for d in shape)
            and _is_count(start)
            and _is_count(end)
            and start <= end
        )
    except (TypeError, KeyError, ValueError, IndexError):
        ok = False
    if not ok:
        raise CheckpointError(
            f"{path.name}: tensor {_short(name)} has a malformed entry (dtype, shape, "
            "data_offsets): not a valid safetensors file; save with save_pretrained"
        )
    return _Tensor(name, dtype, tuple(shape), path, data_start + start, data_start + end)


def _tensors(path: Path) -> list[_Tensor]:
    """The tensors a safetensors file declares, checked to lie within the file."""
    size = path.stat().st_size
    data_start, header = _header(path)
    tensors = [
        _tensor(path, data_start, name, entry)
        for name, entry in header.items()
        if name != "__metadata__"
    ]
    end = max((t.end for t in tensors), default=data_start)
    if end > size:
        raise CheckpointError(f"{path.name}: truncated ({size} bytes, the header promises {end})")
    return tensors


def check_safetensors(path: Path) -> None:
    """Cheap integrity check: the header parses and the file holds every tensor's bytes."""
    _tensors(path)


def safetensors_tensors(path: Path) -> list[tuple[str, int]]:
    """(name, byte size) of each tensor a safetensors file declares (the header, checked)."""
    return [(t.name, t.end - t.start) for t in _tensors(path)]


def _weights(directory: Path) -> list[Path]:
    """The weight files graded, hashed and fingerprinted: one rule (``graded.weight_files``)."""
    from autorl_grading.graded import weight_files

    return weight_files(directory)


# hashing ------------------------------------------------------------------------------------------


def _feed(digest: Any, fd: int, start: int, end: int) -> None:
    """Stream bytes [start, end) of ``fd`` into ``digest`` (hashlib drops the GIL on blocks)."""
    while start < end:
        block = os.pread(fd, min(BLOCK, end - start), start)
        if not block:
            raise CheckpointError("a weight file shrank while it was being hashed")
        digest.update(block)
        start += len(block)


def _frame(digest: Any, *fields: Any) -> None:
    """An unambiguous record: length-prefixed JSON, so no field can run into the next."""
    blob = json.dumps(fields).encode()
    digest.update(len(blob).to_bytes(8, "little") + blob)


def tensor_hash(directory: Path, files: Sequence[Path] | None = None) -> str:
    """Hash of a model's weights by content: each tensor's name, dtype, shape and bytes.

    Blind to the safetensors ``__metadata__``, the header's key order and whitespace and how the
    tensors are split across shards, so none of those can make the same weights look new.
    ``.bin`` files (pickles, never unpickled here) are hashed as file bytes. ``files`` defaults
    to the directory's weight files.
    """
    if files is None:
        files = _weights(directory)
    tensors: dict[str, _Tensor] = {}
    others = []
    for path in sorted(files):
        if path.suffix != ".safetensors":
            others.append(path)
            continue
        for t in _tensors(path):
            if t.name in tensors:
                raise CheckpointError(
                    f"tensor {_short(t.name)} is in both {tensors[t.name].path.name} and "
                    f"{path.name}: each tensor must be saved once; re-save with save_pretrained"
                )
            tensors[t.name] = t
    digest = hashlib.sha256(b"autorl tensor hash 1\0")
    with contextlib.ExitStack() as stack:
        fds: dict[Path, int] = {}
        for name in sorted(tensors):
            t = tensors[name]
            if t.path not in fds:
                fds[t.path] = os.open(t.path, os.O_RDONLY | os.O_CLOEXEC)
                stack.callback(os.close, fds[t.path])
            _frame(digest, "tensor", name, t.dtype, list(t.shape), t.end - t.start)
            _feed(digest, fds[t.path], t.start, t.end)
        for path in others:
            size = path.stat().st_size
            _frame(digest, "file", str(path.relative_to(directory)), size)
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            stack.callback(os.close, fd)
            _feed(digest, fd, 0, size)
    return "sha256:" + digest.hexdigest()


def hash_weights(directory: Path) -> str:
    """Hash of a model directory's weights: what identifies "the same weights" (tensor-based)."""
    return tensor_hash(directory)


def hash_tree(directory: Path, follow_links_within: Path | None = None) -> str:
    """Hash of everything under ``directory``: each entry's relative name and bytes.

    For the base model's integrity check, where a key added to config.json must show. A link
    is hashed as its target text, and its file's bytes are added only when it resolves to a
    regular file inside ``follow_links_within`` (default ``directory``; a hub snapshot passes
    the cache folder that holds its blobs): nothing outside is read, no FIFO is waited on.
    """
    directory = Path(directory)
    within = (follow_links_within or directory).resolve()
    digest = hashlib.sha256(b"autorl tree hash 1\0")
    entries: list[tuple[str, os.DirEntry[str]]] = []
    stack = [directory]
    while stack:
        with os.scandir(stack.pop()) as found:
            for entry in found:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                else:
                    entries.append((Path(entry.path).relative_to(directory).as_posix(), entry))
    for rel, entry in sorted(entries, key=lambda item: item[0]):
        path = Path(entry.path)
        if entry.is_symlink():
            _frame(digest, "link", rel, os.readlink(path))
            real = path.resolve()
            if _inside(real, within) and real.is_file():
                _hash_regular(digest, real, rel)
        else:
            _hash_regular(digest, path, rel)
    return "sha256:" + digest.hexdigest()


def _hash_regular(digest: Any, path: Path, rel: str) -> None:
    """Add a regular file's name, size and bytes; anything else only by its kind."""
    try:
        fd = os.open(path, _FILE_FLAGS)
    except OSError as exc:
        _raise_if_harness(exc)
        _frame(digest, "unreadable", rel, exc.errno)
        return
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            _frame(digest, "special", rel, _kind(info.st_mode))
            return
        _frame(digest, "file", rel, info.st_size)
        _feed(digest, fd, 0, info.st_size)
    finally:
        os.close(fd)


_LAYOUTS = {
    "lora": (
        "adapter_config.json",
        "PeftModel.save_pretrained",
        "peft_type",
        "is this a PEFT adapter?",
        "LoRA adapter without weights: expected adapter_model.safetensors next to "
        "adapter_config.json (PeftModel.save_pretrained writes both)",
    ),
    "full": (
        "config.json",
        "model.save_pretrained",
        "model_type",
        "not a transformers config",
        "no weights: expected model.safetensors (or sharded model-0000x-of-0000y."
        "safetensors); save with model.save_pretrained(path)",
    ),
}
"""Per checkpoint kind: its config file, what writes it, the key that proves what it is, what
to say when that key is missing, and what to say when it has no weights."""


def validate(directory: Path) -> CheckpointInfo:
    """Check a copied checkpoint; raise CheckpointError with a precise, fixable message."""
    kind = "lora" if (directory / "adapter_config.json").exists() else "full"
    if kind == "full" and not (directory / "config.json").exists():
        raise CheckpointError(
            "config.json missing: submit a directory written by model.save_pretrained(...) "
            "(or a PEFT adapter directory with adapter_config.json)"
        )
    config, saved_by, key, not_that, no_weights = _LAYOUTS[kind]
    if key not in _read_json(directory / config, f"write it with {saved_by}"):
        raise CheckpointError(f"{config} has no {key!r}: {not_that}")
    files = _weights(directory)
    if not files:
        raise CheckpointError(no_weights)
    if kind == "full" and not any((directory / name).exists() for name in TOKENIZER_VOCAB_FILES):
        raise CheckpointError(
            "tokenizer missing: save it next to the model with tokenizer.save_pretrained(path)"
        )
    # parsing every header is part of hashing: a malformed or truncated file fails here
    return CheckpointInfo(kind, tuple(p.name for p in files), tensor_hash(directory, files))
