"""The agent runtime: a Python environment with the training stack and nothing of the harness.

Built from the harness's own environment, offline: a virtual environment skeleton whose
``site-packages`` receives the files (hard links, or copies across file systems) of the
training stack's distributions and their dependency closure, read from each distribution's
``RECORD``. autorl's harness, task, evaluator and report packages are never in it, so an agent
cannot import, read or patch the code that scores it. One runtime per set of distributions and
versions lives in ``<cache>/runtime/<digest>``; namespace sandboxes show it read-only.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from autorl.digest import json_digest, short
from autorl.errors import ConfigError
from autorl.paths import cache_dir, file_lock

BUILDER_VERSION = "1"
TRAINING_STACK = (
    "torch",
    "transformers",
    "peft",
    "trl",
    "accelerate",
    "deepspeed",
    "datasets",
    "safetensors",
    "tokenizers",
    "numpy",
    "httpx",
    "requests",
)
"""What every agent gets: the libraries the paper's agents train with (DeepSpeed when it is
installed: the multi-GPU recipes' ZeRO), and HTTP clients."""
REQUIRED = ("torch", "transformers")
NEVER = ("autorl",)
"""Name prefixes that never enter a runtime, even as someone's dependency."""
MARKER = ".autorl-runtime.json"


@dataclass(frozen=True)
class Runtime:
    """A built runtime: ``python`` runs with ``site-packages`` and the base interpreter."""

    root: Path
    python: Path
    base_prefix: Path
    """The interpreter installation the venv points at (mounted read-only with the runtime)."""
    base_site_packages: tuple[Path, ...]
    """The base interpreter's own site-packages: hidden by namespace sandboxes."""
    distributions: tuple[str, ...]

    @property
    def bin_dir(self) -> Path:
        return self.python.parent

    @property
    def read_only(self) -> tuple[Path, ...]:
        return (self.root, self.base_prefix)


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _installed() -> dict[str, md.Distribution]:
    found: dict[str, md.Distribution] = {}
    for dist in md.distributions():
        name = dist.metadata.get("Name")
        if name and _canonical(name) not in found:
            found[_canonical(name)] = dist
    return found


def closure(roots: Iterable[str], installed: dict[str, md.Distribution]) -> dict[str, str]:
    """Distribution -> version for ``roots`` (requirement strings: ``textworld[pddl]`` brings
    that extra's dependencies) and their marker-true requirements, recursively."""
    from packaging.requirements import InvalidRequirement, Requirement

    missing = [r for r in REQUIRED if _canonical(r) not in installed]
    if missing:
        raise ConfigError(
            f"the agent runtime needs {', '.join(missing)}, not installed in this environment",
            hint="pip install torch==2.13.0 transformers peft trl accelerate datasets "
            "(in one command: see the README)",
        )
    chosen: dict[str, str] = {}
    done: set[tuple[str, str]] = set()
    stack = [_parse(r) for r in roots]
    while stack:
        name, extras = stack.pop()
        if any(name.startswith(p) for p in NEVER) or name not in installed:
            continue  # never the harness; or an optional/platform-only dependency not installed
        dist = installed[name]
        chosen[name] = dist.version
        for extra in ("", *extras):
            if (name, extra) in done:
                continue
            done.add((name, extra))
            for line in dist.requires or []:
                try:
                    req = Requirement(line)
                except InvalidRequirement:
                    continue
                if req.marker is not None and not req.marker.evaluate({"extra": extra}):
                    continue
                if req.marker is None and extra:
                    continue  # already followed for the plain requirement
                stack.append((_canonical(req.name), tuple(sorted(req.extras))))
    return dict(sorted(chosen.items()))


def _parse(requirement: str) -> tuple[str, tuple[str, ...]]:
    from packaging.requirements import Requirement

    req = Requirement(requirement)
    return _canonical(req.name), tuple(sorted(req.extras))


def _digest(dists: dict[str, str]) -> str:
    payload = {"builder": BUILDER_VERSION, "python": sys.version, "base": sys.base_prefix}
    return short(json_digest({**payload, "dists": dists}))


def _link_or_copy(source: Path, target: Path) -> None:
    if target.exists():  # a module's bytecode, linked with its source before RECORD named it
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _copy_script(source: Path, target: Path, python: Path) -> None:
    """Console scripts: same file with the shebang pointed at the runtime's interpreter."""
    data = source.read_bytes()
    if data.startswith(b"#!") and b"python" in data.split(b"\n", 1)[0]:
        rest = data.split(b"\n", 1)[1] if b"\n" in data else b""
        data = b"#!" + str(python).encode() + b"\n" + rest
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    target.chmod(0o755)


def _site_packages(root: Path) -> Path:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return root / "lib" / version / "site-packages"


def _populate(staging: Path, names: Iterable[str], installed: dict[str, md.Distribution]) -> None:
    site = _site_packages(staging)
    python = staging / "bin" / "python"
    for name in names:
        dist = installed[name]
        base = Path(str(dist.locate_file("")))
        for entry in dist.files or []:
            source = Path(str(dist.locate_file(entry)))
            if not source.is_file():
                continue
            relative = os.path.normpath(str(entry))
            if relative.startswith(".."):
                parts = Path(relative).parts
                if "bin" in parts:  # console scripts live in <prefix>/bin
                    _copy_script(source, staging / "bin" / source.name, python)
                continue
            if base != site and not str(source).startswith(str(base)):
                continue
            _link_or_copy(source, site / relative)
            if relative.endswith(".py"):
                _link_bytecode(source, site / relative)


def _link_bytecode(source: Path, target: Path) -> None:
    """The harness's compiled bytecode of a module, beside its source in the runtime, whether
    or not the installer listed it in RECORD (``pip --no-compile`` and uv list none; the
    harness compiled them after). Namespace sandboxes show the runtime read-only, so a module
    without it would be compiled again at every import in every agent process."""
    compiled = Path(importlib.util.cache_from_source(str(source)))
    if compiled.is_file():
        _link_or_copy(compiled, Path(importlib.util.cache_from_source(str(target))))


def _finalize(staging: Path, dists: dict[str, str]) -> None:
    """Site-packages of the skeleton must not see the base interpreter's packages."""
    cfg = staging / "pyvenv.cfg"
    text = cfg.read_text()
    if "include-system-site-packages = true" in text:
        cfg.write_text(text.replace("= true", "= false"))
    (staging / MARKER).write_text(
        json.dumps({"distributions": dists, "python": sys.version, "built": time.time()}) + "\n"
    )


def base_site_packages() -> tuple[Path, ...]:
    """The base interpreter's own site-packages directories (hidden inside sandboxes)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [
        Path(sys.base_prefix) / "lib" / version / "site-packages",
        Path(sys.base_prefix) / "local" / "lib" / version / "dist-packages",
    ]
    return tuple(p for p in candidates if p.is_dir())


SYSTEM_SITE_GLOBS = (
    "/usr/lib/python3*/dist-packages",
    "/usr/lib/python3*/site-packages",
    "/usr/local/lib/python3*/dist-packages",
    "/usr/local/lib/python3*/site-packages",
)


def harness_code_paths() -> tuple[Path, ...]:
    """Where the harness's code and packages live: every site directory of this interpreter,
    any system Python's, and the source of every ``autorl*`` distribution (editable installs
    point into a checkout). Sandboxes hide each one that falls under a directory they mount
    (a system-wide install lands in /usr/local, which the agent's programs need)."""
    import glob
    import site
    import sysconfig

    found = {Path(p) for p in site.getsitepackages()}
    found.add(Path(site.getusersitepackages()))
    found.update(Path(sysconfig.get_paths()[k]) for k in ("purelib", "platlib"))
    found.update(Path(p) for pattern in SYSTEM_SITE_GLOBS for p in glob.glob(pattern))
    for dist in md.distributions():
        name = dist.metadata.get("Name") or ""
        if not _canonical(name).startswith(NEVER):
            continue
        for entry in dist.files or []:
            top = Path(str(dist.locate_file(entry)))
            if top.suffix == ".pth" and top.is_file():  # editable: the .pth names the source
                for line in top.read_text(errors="replace").splitlines():
                    if line.startswith("/") and Path(line).is_dir():
                        found.add(Path(line))
    return tuple(sorted(p.resolve() for p in found if p.exists()))


def build_runtime(extra: Iterable[str] = (), cache: Path | None = None) -> Runtime:
    """The runtime for the training stack plus ``extra`` distributions, built once per digest."""
    installed = _installed()
    extra = tuple(extra)
    unknown = [e for e in extra if _parse(e)[0] not in installed]
    if unknown:
        raise ConfigError(
            f"the agent runtime needs {', '.join(unknown)} (asked for by the task's kit), "
            "which is not installed in the harness's environment",
            hint=f"pip install {' '.join(unknown)}",
        )
    dists = closure((*TRAINING_STACK, *extra), installed)
    # the real path: a sandbox mounts the runtime where it lies, and a cache behind a symlink
    # ($AUTORL_CACHE or runtime/ itself) would name a path the sandbox does not have
    root_dir = (cache or cache_dir("runtime")).resolve()
    target = root_dir / _digest(dists)
    python = target / "bin" / "python"
    runtime = Runtime(
        target,
        python,
        Path(sys.base_prefix),
        base_site_packages(),
        tuple(dists),
    )
    if (target / MARKER).is_file():
        return runtime
    with file_lock(root_dir / f".{target.name}.lock"):
        if (target / MARKER).is_file():
            return runtime
        staging = root_dir / f".{target.name}.staging-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        base_python = getattr(sys, "_base_executable", sys.executable)
        subprocess.run(
            [base_python, "-m", "venv", "--without-pip", str(staging)],
            check=True,
            capture_output=True,
        )
        _populate(staging, dists, installed)
        _finalize(staging, dists)
        for path in (staging, *staging.rglob("*")):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return runtime
