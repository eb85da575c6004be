"""Materialise the shipped tiny model into the model cache.

The weights ship inside the package (``weights/``). ``materialize`` copies them (5.6 MB, a few
milliseconds) into ``<cache_dir>/tiny-<content hash>/`` and marks the files read-only, rather
than returning the package directory itself: run workspaces link ``models/base`` to what we
return, and the installed package must never be writable through such a link. The content
hash in the name means a rebuilt model never reuses a stale copy.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from autorl.digest import file_digest, short
from autorl.errors import ConfigError
from autorl.types import ModelInfo

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
REQUIRED = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


def shipped_dir() -> Path:
    """The package's own copy (read-only by convention); checked for completeness."""
    missing = [name for name in REQUIRED if not (WEIGHTS_DIR / name).is_file()]
    if missing:
        raise ConfigError(
            f"the tiny model's files are missing from {WEIGHTS_DIR}: {', '.join(missing)}",
            hint="reinstall autorl-model-tiny, or rebuild them with "
            "plugins/autorl-model-tiny/scripts/build_tiny.py",
        )
    return WEIGHTS_DIR


def content_hash(directory: Path) -> str:
    return short(file_digest(sorted(p for p in directory.iterdir() if p.is_file())), 12)


class TinyModel:
    """``autorl run --model tiny``: real transformers model, small enough for CPU tests."""

    name = "tiny"

    def materialize(self, cache_dir: Path) -> ModelInfo:
        source = shipped_dir()
        target = Path(cache_dir) / f"tiny-{content_hash(source)}"
        if not (target / "model.safetensors").is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".tiny-", dir=target.parent))
            try:
                for path in source.iterdir():
                    if path.is_file():
                        shutil.copyfile(path, staging / path.name)
                        os.chmod(staging / path.name, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
                staging.chmod(0o755)
                try:
                    staging.rename(target)
                except OSError:  # another process won the race: its copy is identical
                    if not (target / "model.safetensors").is_file():
                        raise
            finally:
                if staging.exists():
                    for path in staging.iterdir():
                        path.unlink()
                    staging.rmdir()
        return ModelInfo(
            name=self.name,
            path=target,
            description="tiny: 1.4 M-parameter Qwen2 chat model shipped with autorl-model-tiny",
        )
