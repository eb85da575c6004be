"""One idle engine kept per process, for the next evaluation of the same model.

A run evaluates the same weights more than once: the base model on the dev split (the agent's
feedback), then on the sealed test split; the selected checkpoint on dev when it was submitted,
then on test at the end. Each engine start took 33-54 s here, more than a small evaluation's
generation. So :meth:`Generator.close <autorl_hf.generation.Generator.close>` hands its engine
back instead of stopping it: it stays up for ``$AUTORL_ENGINE_IDLE_S`` seconds (default
:data:`IDLE_S`; ``0`` stops engines at once, as before), and the next generator over the same
model directory (same files, same precision, same engine build) takes it. Asking for another
model stops the idle one first: one engine's memory at a time. An idle engine is idle (a test
measures its CPU), and it ends with the harness like any other (its lifeline).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

IDLE_S = 300.0
IDLE_ENV = "AUTORL_ENGINE_IDLE_S"

_lock = threading.Lock()
_idle: tuple[tuple[Any, ...], Any, threading.Timer] | None = None


def idle_seconds() -> float:
    raw = os.environ.get(IDLE_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else IDLE_S
    except ValueError:
        return IDLE_S


def model_key(path: Path, precision: str, engine_root: Path) -> tuple[Any, ...]:
    """What must match for an engine to serve a new generator: the directory and the size and
    change time of every file in it (a directory rewritten in place is another model), the
    precision and the engine build."""
    try:
        stats = [(f.name, f.stat()) for f in path.iterdir() if f.is_file()]
        files = sorted((name, st.st_size, st.st_mtime_ns) for name, st in stats)
    except OSError:  # not a directory: the engine's own start says what is wrong
        files = []
    return (str(path.resolve()), tuple(files), precision, str(engine_root))


def take(key: tuple[Any, ...]) -> Any | None:
    """The idle engine for ``key``, now the caller's; else None, and any idle engine stopped
    (the caller is about to start another)."""
    global _idle
    with _lock:
        held, _idle = _idle, None
    if held is None:
        return None
    held_key, backend, timer = held
    timer.cancel()
    if held_key == key and backend.alive():
        return backend
    backend.close()
    return None


def give(key: tuple[Any, ...], backend: Any) -> None:
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
