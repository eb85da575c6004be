"""Where autorl keeps caches shared across runs (converted models, task data, baselines), and
how a task's cache directory is keyed; the lock that serialises building one."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from autorl.digest import json_digest, short


def cache_root() -> Path:
    """``$AUTORL_CACHE``, else ``$XDG_CACHE_HOME/autorl``, else ``~/.cache/autorl``."""
    explicit = os.environ.get("AUTORL_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "autorl"


def cache_dir(*parts: str) -> Path:
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def task_cache_key(seed: int, options: Mapping[str, Any]) -> str:
    """What besides its name and version changes a task's data: the seed and the options, as
    ``s<seed>-<16 hex of the canonical JSON of {seed, options}>``. Two runs that could get
    different splits never share a directory, so preparing one never rewrites the other's."""
    digest = json_digest({"seed": seed, "options": dict(options)})
    return f"s{seed}-{short(digest)}"


def task_cache_dir(
    name: str, version: str, seed: int, options: Mapping[str, Any], root: Path | None = None
) -> Path:
    """The ``TaskContext.cache_dir`` the harness gives a task for this seed and these options:
    ``<cache>/tasks/<name>/<version>/<task_cache_key>`` (``root`` replaces ``<cache>``)."""
    path = (root or cache_root()).joinpath("tasks", name, version, task_cache_key(seed, options))
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def file_lock(path: Path, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created, with its folder) while the block runs,
    so two processes never build the same cache entry at once; ``waiting()`` is called first
    when another process holds it (to say why nothing happens)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting()
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
