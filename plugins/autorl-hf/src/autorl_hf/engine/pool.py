"""One idle engine kept per process, for the next evaluation of the same model frame.

A run evaluates the base model and every submission, each on the dev split (the agent's
feedback) and the selected ones again on the sealed test split. Each engine start took 33-70 s
on the hosts measured, more than a small evaluation's generation. So :meth:`Generator.close
<autorl_hf.generation.Generator.close>` hands its engine back instead of stopping it: it stays
up for ``$AUTORL_ENGINE_IDLE_S`` seconds (default :data:`IDLE_S`; ``0`` stops engines at once),
and the next generator takes it when it asks for the same precision and engine build and a
model of the same frame (:func:`frame_key`: config, tokenizer, generation config, tensor names,
dtypes and shapes), as every checkpoint a run grades has (the base's frame around other
weights). Other weights are loaded into the running engine (``EngineServer.load_weights``:
~1.5 s instead of a start). A model of another frame stops the idle engine first: one engine's
memory at a time. An idle engine is idle (a test measures its CPU), and it ends with the
harness like any other.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, NamedTuple

from autorl.types import TOKENIZER_FILE_NAMES

IDLE_S = 1800.0
"""Long enough to span a default run's agent phase (8 minutes) and most longer ones, so the
base's engine grades the submissions too: an idle engine uses no CPU, only its memory (~3 GB
for SmolLM2 in fp32); ``$AUTORL_ENGINE_IDLE_S`` trades that memory back."""
IDLE_ENV = "AUTORL_ENGINE_IDLE_S"
FRAME_FILES = ("config.json", "generation_config.json", *sorted(TOKENIZER_FILE_NAMES))
"""What, besides the weights, decides what an engine computes and how it reads its output."""

log = logging.getLogger(__name__)


class EngineKey(NamedTuple):
    """Who may take an idle engine: the same ``frame`` (None: only the same ``weights``);
    the same ``weights`` takes it as is, other weights are loaded from ``path``."""

    frame: tuple[Any, ...] | None
    weights: tuple[Any, ...]
    path: Path


_lock = threading.Lock()
_idle: tuple[EngineKey, Any, threading.Timer] | None = None


def idle_seconds() -> float:
    raw = os.environ.get(IDLE_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else IDLE_S
    except ValueError:
        return IDLE_S


def weights_key(path: Path, precision: str, engine_root: Path) -> tuple[Any, ...]:
    """The same weights: the directory and the size and change time of every file in it (a
    directory rewritten in place is another model), the precision and the engine build."""
    try:
        stats = [(f.name, f.stat()) for f in path.iterdir() if f.is_file()]
        files = sorted((name, st.st_size, st.st_mtime_ns) for name, st in stats)
    except OSError:  # not a directory: the engine's own start says what is wrong
        files = []
    return (str(path.resolve()), tuple(files), precision, str(engine_root))


def frame_key(path: Path, precision: str, engine_root: Path) -> tuple[Any, ...] | None:
    """The model's frame: the bytes of its :data:`FRAME_FILES` and its tensors' names, dtypes
    and shapes (from the safetensors headers), the precision and the engine build. None when the
    weights are not safetensors or a header is unreadable: no other weights are loaded."""
    digest = hashlib.sha256()
    try:
        for name in FRAME_FILES:
            file = path / name
            if file.is_file():
                digest.update(f"{name}:{file.stat().st_size}:".encode())
                with open(file, "rb") as handle:  # in chunks: a file of any size
                    digest.update(hashlib.file_digest(handle, "sha256").digest())
        shapes = sorted(_tensor_shapes(path))
    except Exception:  # an unreadable model: no frame to share; its own start says what is wrong
        return None
    if not shapes:
        return None
    digest.update(json.dumps(shapes).encode())
    return (digest.hexdigest(), precision, str(engine_root))


def _tensor_shapes(path: Path) -> list[tuple[str, str, list[int]]]:
    """(name, dtype, shape) of every tensor in ``path``'s ``*.safetensors`` files, from their
    headers: a checkpoint that stores a tensor in another dtype gets an engine of its own
    rather than a load that would cast it."""
    from autorl import safetensors_header

    found: list[tuple[str, str, list[int]]] = []
    for file in sorted(path.glob("*.safetensors")):
        _, header = safetensors_header.read(file)
        found += [
            (k, str(v["dtype"]), list(v["shape"])) for k, v in header.items() if k != "__metadata__"
        ]
    return found


def model_key(path: Path, precision: str, engine_root: Path) -> EngineKey:
    """What decides whether an idle engine may serve a generator over ``path``."""
    return EngineKey(
        frame_key(path, precision, engine_root), weights_key(path, precision, engine_root), path
    )


def take(key: EngineKey) -> Any | None:
    """The idle engine, now the caller's, when ``key`` has its weights, or its frame (the
    new weights loaded into it first); else None, and any idle engine stopped (the caller is
    about to start another)."""
    global _idle
    with _lock:
        held, _idle = _idle, None
    if held is None:
        return None
    held_key, backend, timer = held
    timer.cancel()
    if backend.alive():
        if held_key.weights == key.weights:
            return backend
        if key.frame is not None and held_key.frame == key.frame:
            try:
                backend.load(key.path)
                return backend
            except Exception as exc:  # a fresh engine is the safe answer, and still correct
                log.warning("loading %s into the idle engine failed: %s", key.path, exc)
    backend.close()
    return None


def give(key: EngineKey, backend: Any) -> None:
    """Keep ``backend`` idle for the next :func:`take` of ``key``, or stop it when engines
    are not kept (``$AUTORL_ENGINE_IDLE_S=0``)."""
    global _idle
    seconds = idle_seconds()
    if seconds <= 0 or not backend.alive():
        backend.close()
        return
    timer = threading.Timer(seconds, _expire, args=(backend,))
    timer.daemon = True
    with _lock:
        previous, _idle = _idle, (key, backend, timer)
    timer.start()
    if previous is not None:
        previous[2].cancel()
        previous[1].close()


def _expire(backend: Any) -> None:
    global _idle
    with _lock:
        mine = _idle is not None and _idle[1] is backend
        if mine:
            _idle = None
    if mine:  # else it was taken or replaced meanwhile: no longer the timer's to stop
        backend.close()


def close_idle() -> None:
    """Stop the idle engine now, if there is one."""
    global _idle
    with _lock:
        held, _idle = _idle, None
    if held is not None:
        held[2].cancel()
        held[1].close()
