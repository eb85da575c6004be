"""Pinned agent CLIs installed on demand into the user cache, once, under a lock.

Each CLI lives in ``<cache>/agents/<name>-<version>/``: an npm prefix for the four Node CLIs, a
Python 3.12 virtual environment for OpenHands. A marker file written last says the install
finished; a directory without it (an interrupted install) is wiped and redone. An exclusive
``fcntl`` lock next to the directory makes parallel runs wait for one install instead of
clashing. npm installs keep optional dependencies: that is where each CLI's native binary is.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autorl.errors import ConfigError
from autorl.paths import cache_dir, file_lock

MARKER = ".autorl-installed"
Log = Callable[[str], None]


def stderr_log(message: str) -> None:
    print(f"[autorl agent-cli] {message}", file=sys.stderr, flush=True)


def _run_install(argv: list[str], what: str, log: Log, timeout: float) -> None:
    """Run an installer, streaming its output to stderr; a failure is a ConfigError."""
    log(f"running: {' '.join(argv)}")
    try:
        proc = subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        raise ConfigError(
            f"installing {what} took longer than {timeout:.0f} s",
            hint="check the network to the package registry, or install ahead of time with "
            "`autorl agent-cli install`",
        ) from exc
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-15:])
        raise ConfigError(
            f"installing {what} failed (exit {proc.returncode}):\n{tail}",
            hint="fix the error above (registry access, disk space) and run "
            "`autorl agent-cli install` again",
        )


@dataclass(frozen=True)
class AgentTool:
    """One pinned CLI: where it goes in the cache and how to install it there."""

    name: str
    """The agent name (``claude-code``); also the cache directory's prefix."""
    package: str
    version: str
    binary: str

    @property
    def prefix(self) -> Path:
        return cache_dir("agents") / f"{self.name}-{self.version}"

    @property
    def requirement(self) -> str:
        raise NotImplementedError

    def executable(self) -> Path:
        raise NotImplementedError

    def is_installed(self) -> bool:
        return (self.prefix / MARKER).is_file() and self.executable().exists()

    def read_only(self) -> tuple[Path, ...]:
        """Host paths the installed CLI needs at run time (shown read-only in sandboxes)."""
        return (self.prefix,)

    def _install_into(self, prefix: Path, log: Log) -> None:
        raise NotImplementedError

    def ensure(self, log: Log = stderr_log, timeout: float = 900.0) -> Path:
        """The CLI's executable, installing the pinned version first if the cache lacks it."""
        if self.is_installed():
            return self.executable()
        prefix = self.prefix
        # one installer per prefix; say so when another process is installing the same CLI
        waiting = f"waiting for another process installing into {prefix}"
        with file_lock(prefix.with_name(prefix.name + ".lock"), lambda: log(waiting)):
            if self.is_installed():  # another process finished it while we waited
                return self.executable()
            if prefix.exists():
                log(f"removing an unfinished install in {prefix}")
                shutil.rmtree(prefix)
            prefix.mkdir(parents=True)
            log(f"installing {self.requirement} into {prefix} (once per version; ~1-3 minutes)")
            started = time.monotonic()
            self._install_into(prefix, log)
            if not self.executable().exists():
                raise ConfigError(
                    f"{self.requirement} installed but {self.executable()} is missing",
                    hint="remove the directory and run `autorl agent-cli install` again",
                )
            (prefix / MARKER).write_text(f"{self.requirement}\n")
            log(f"installed {self.requirement} in {time.monotonic() - started:.0f} s")
        return self.executable()


@dataclass(frozen=True)
class NpmTool(AgentTool):
    """A Node CLI from npm, installed with ``npm install --prefix`` (optional deps kept)."""

    @property
    def requirement(self) -> str:
        return f"{self.package}@{self.version}"

    def executable(self) -> Path:
        return self.prefix / "node_modules" / ".bin" / self.binary

    def _install_into(self, prefix: Path, log: Log) -> None:
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            raise ConfigError(
                f"agent {self.name!r} needs Node.js and npm to install {self.requirement}",
                hint="install Node.js >= 20 with npm (e.g. `apt-get install nodejs npm`)",
            )
        argv = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund"]
        _run_install([*argv, "--loglevel=error", self.requirement], self.requirement, log, 900)


PYTHON_WANTED = (3, 12)
"""OpenHands 1.16 declares ``Requires-Python: ==3.12.*``."""


def _python_version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.stdout.split()
    return (int(parts[0]), int(parts[1])) if out.returncode == 0 and len(parts) == 2 else None


def find_python(wanted: tuple[int, int] = PYTHON_WANTED) -> str:
    """A Python ``wanted`` (major, minor): ``$AUTORL_PYTHON312``, then ``python3.12`` and
    ``python3`` on PATH, then pyenv's installed versions (pyenv shims of versions that are not
    active fail the check and are skipped)."""
    major_minor = ".".join(map(str, wanted))
    candidates = [
        os.environ.get("AUTORL_PYTHON312", ""),
        shutil.which(f"python{major_minor}") or "",
        shutil.which("python3") or "",
    ]
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/{major_minor}.*/bin/python3"))
    candidates += ["/usr/local/bin/python" + major_minor, "/usr/bin/python" + major_minor]
    for candidate in dict.fromkeys(filter(None, candidates)):
        if _python_version(candidate) == wanted:
            return candidate
    raise ConfigError(
        f"no Python {major_minor} found (OpenHands requires exactly {major_minor}.*; autorl "
        "itself may run on another version)",
        hint=f"install Python {major_minor} (e.g. `pyenv install {major_minor}` or "
        f"`apt-get install python{major_minor}-venv`) or point AUTORL_PYTHON312 at its "
        "interpreter",
    )


def uv_binary() -> str:
    """The ``uv`` executable shipped by the ``uv`` wheel (a dependency of this package)."""
    try:
        from uv import find_uv_bin
    except ImportError as exc:
        raise ConfigError(
            "the Python agent CLIs install with uv, which is not importable",
            hint="pip install uv",
        ) from exc
    return find_uv_bin()


@dataclass(frozen=True)
class VenvTool(AgentTool):
    """A Python CLI from PyPI, installed into its own virtual environment with uv.

    uv rather than pip: pip's resolver took 9-10 minutes on OpenHands' dependency tree here,
    uv about one minute with a cold cache.
    """

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    def executable(self) -> Path:
        return self.prefix / "venv" / "bin" / self.binary

    def read_only(self) -> tuple[Path, ...]:
        """The venv, and the interpreter installation its ``python`` links to."""
        paths = [self.prefix]
        cfg = self.prefix / "venv" / "pyvenv.cfg"
        try:
            lines = cfg.read_text().splitlines()
        except OSError:
            return tuple(paths)
        for line in lines:
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                paths.append(Path(value.strip()).resolve().parent)
        return tuple(paths)

    def _install_into(self, prefix: Path, log: Log) -> None:
        python = find_python()
        uv = uv_binary()
        venv = prefix / "venv"
        log(f"creating a virtual environment with {python}")
        _run_install([uv, "venv", "-q", "--python", python, str(venv)], "a venv", log, 300)
        _run_install(
            [
                uv,
                "pip",
                "install",
                "-q",
                "--python",
                str(venv / "bin" / "python"),
                self.requirement,
            ],
            self.requirement,
            log,
            1500,
        )
