"""Shared fixtures of the cross-distribution tests: fixture plugins installed with real pip.

Each fixture plugin under ``tests/fixtures/`` is pip-installed (no index, no build isolation, so
offline) into its own ``--target`` directory once per session. A test makes it visible to the
real ``autorl`` console script through ``PYTHONPATH``: ``importlib.metadata`` then finds its
``.dist-info`` and entry point exactly as for a normal install, and the project venv stays clean
for everyone else's tests.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from autorl_testing.runs import SHARED_CACHE_ENV
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if importlib.util.find_spec("autorl_sandbox_docker") is not None:
    from autorl_sandbox_docker.testing import docker_engine  # noqa: F401  (a session fixture)

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
AUTORL = str(Path(sys.executable).parent / "autorl")

# In-process tests (conformance, registry) import the fixture plugins' modules from source; no
# .dist-info is on these paths, so entry-point discovery never sees them this way.
for _name in ("plugin", "misspelt"):
    _src = str(FIXTURES / f"autorl-fixture-{_name}" / "src")
    if _src not in sys.path:
        sys.path.insert(0, _src)


def pip_install_target(project: Path, target: Path) -> None:
    """``pip install --no-deps --target`` one project; builds with hatchling, offline if it can."""
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
    if importlib.util.find_spec("hatchling") is not None:
        cmd += ["--no-build-isolation", "--no-index"]
    proc = subprocess.run(
        [*cmd, str(project)], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    if proc.returncode != 0:
        raise RuntimeError(f"pip install {project.name} failed:\n{proc.stdout}\n{proc.stderr}")


@pytest.fixture(scope="session")
def installed_fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """fixture name (``plugin``, ``broken``, ``misspelt``) -> its pip ``--target`` directory.

    Installed once per session, not once per xdist worker (three pip installs, ~4 CPU-s):
    into the session's shared directory (``autorl_testing.runs``) under a lock; tests only
    put these directories on ``PYTHONPATH``."""
    shared = os.environ.get(SHARED_CACHE_ENV)
    root = Path(shared) / "installed-plugins" if shared else tmp_path_factory.mktemp("plugins")
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in ("plugin", "broken", "misspelt"):
            target = root / name
            if not (root / f"{name}.done").exists():
                shutil.rmtree(target, ignore_errors=True)
                pip_install_target(FIXTURES / f"autorl-fixture-{name}", target)
                (root / f"{name}.done").touch()
            out[name] = target
    return out


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without autorl's plugin switches, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AUTORL_") and k not in {"PYTHONPATH", "COLUMNS"}
    }
    env["COLUMNS"] = "200"  # rich tables: keep rows on one line so tests can grep them
    env.update(extra)
    return env


@pytest.fixture
def run_autorl(
    installed_fixtures: dict[str, Path],
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the real ``autorl`` console script with some fixture plugins on ``PYTHONPATH``."""

    def run(
        *args: str, plugins: Iterable[str] = ("plugin",), **env: str
    ) -> subprocess.CompletedProcess[str]:
        path = os.pathsep.join(str(installed_fixtures[name]) for name in plugins)
        return subprocess.run(
            [AUTORL, *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=clean_env(PYTHONPATH=path, **env),
            cwd=REPO,
        )

    return run


@pytest.fixture(scope="session")
def pip_install() -> Callable[[Path, Path], None]:
    """``pip_install(project_dir, target_dir)``: see :func:`pip_install_target`."""
    return pip_install_target


@pytest.fixture(scope="session")
def autorl_env() -> Callable[..., dict[str, str]]:
    """``autorl_env(**extra)``: see :func:`clean_env`."""
    return clean_env


CLI_AGENTS = ("codex", "claude-code", "gemini-cli", "opencode", "openhands")


def _install_all() -> dict[str, float]:
    from autorl_agent_cli_common.command import cli_agents, install_all

    started = time.monotonic()
    seconds = install_all(cli_agents(list(CLI_AGENTS)), log=lambda m: print(m, file=sys.stderr))
    seconds["all"] = time.monotonic() - started
    return seconds


@pytest.fixture(scope="session")
def installed_clis() -> dict[str, float]:
    """Every pinned CLI in the user cache: concurrent installs, skipped when already there."""
    if shutil.which("npm") is None:
        pytest.fail("the agent-CLI integration tests need Node.js and npm")
    seconds = _install_all()
    print(f"agent CLI installs (s): {json.dumps({k: round(v) for k, v in seconds.items()})}")
    return seconds


@dataclass(frozen=True)
class RepoDistribution:
    """One ``pyproject.toml`` of the repository: what a user pip-installs by this name."""

    name: str
    path: Path
    requires: tuple[Requirement, ...]
    """``[project].dependencies``."""
    extras: dict[str, tuple[Requirement, ...]]
    """``[project.optional-dependencies]``."""


@pytest.fixture(scope="session")
def repo_distributions() -> dict[str, RepoDistribution]:
    """Every distribution of the repository by canonical name (core and the plugins)."""
    found = {}
    for pyproject in [REPO / "core" / "pyproject.toml", *REPO.glob("plugins*/*/pyproject.toml")]:
        project = tomllib.loads(pyproject.read_text())["project"]
        name = canonicalize_name(project["name"])
        extras = project.get("optional-dependencies", {})
        found[name] = RepoDistribution(
            name=name,
            path=pyproject.parent,
            requires=tuple(Requirement(line) for line in project.get("dependencies", [])),
            extras={k: tuple(Requirement(line) for line in v) for k, v in extras.items()},
        )
    assert len(found) > 40, f"no pyproject.toml found under {REPO}"
    return dict(sorted(found.items()))
