"""Where autorl keeps caches shared across runs (converted models, task data, baselines)."""

from __future__ import annotations

import os
from pathlib import Path


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
