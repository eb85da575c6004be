"""Installable the way users install (issue #34): from wheels, not from this checkout.

The dev venv installs every distribution editable, so a file missing from a wheel or a
dependency nobody declared never shows there. Two checks close that gap:

- fast: every distribution declares what its sources import (another autorl distribution or a
  third-party library: its declared requirements, followed transitively, or one of its extras),
  and a task depends on the evaluator it names;
- e2e: every distribution is built as a wheel (``pip wheel --no-deps --no-build-isolation``),
  ``autorl autorl-task-webshop autorl-agent-scripted autorl-model-tiny`` is installed from them
  into a venv of its own, and ``autorl run --task webshop --model tiny`` must finish with a
  score. The venv's third-party libraries (torch and the rest, about 1.6 GB, 3 min to install)
  are cached under the autorl cache keyed by the lock (``constraints.txt``) and the Python
  version; every autorl distribution in it is removed and installed again from this checkout's
  wheels, and whatever the four do not require is uninstalled, so the venv holds what a fresh
  install would. Measured on 2 cores shared with other test sessions: 6.5 min the first time
  (3 min of it installing the third-party libraries), 3.9 min with the cache.
"""

from __future__ import annotations

import ast
import fcntl
import functools
import hashlib
import importlib.metadata as md
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from autorl.kinds import SHIPPED, shipped_distribution
from autorl.paths import cache_dir
from autorl.registry import Registry

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "constraints.txt"
ROOTS = ("autorl", "autorl-task-webshop", "autorl-agent-scripted", "autorl-model-tiny")
"""What a user installs for the tiny WebShop run (docs/installing.md)."""
TORCH = "torch==2.13.0"
"""In the same pip command as the libraries that need torch: a bare ``torch`` pulls a CUDA
build of several GB (the Makefile does the same)."""
KEEP = {"pip", "setuptools", "wheel"}
UNDECLARED = {
    ("autorl-runner", "torch"): "only `--device cuda` imports it, to count the GPUs; a run "
    "evaluates with an evaluator, and every evaluator brings torch (autorl-hf)",
}
"""Imports a distribution does not declare on purpose, and why."""


def pip(python: Path, *args: str, timeout: int = 900) -> str:
    proc = subprocess.run(
        [str(python), "-m", "pip", *args, "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
    assert proc.returncode == 0, f"pip {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@functools.cache
def _requirements(dist: md.Distribution) -> tuple[Requirement, ...]:
    """A distribution's requirements, parsed once (its metadata is read from disk each time)."""
    return tuple(Requirement(line) for line in dist.requires or [])


def closure(installed: dict[str, md.Distribution], roots: Iterable[Requirement]) -> set[str]:
    """Every distribution ``roots`` require, through the installed metadata (extras included)."""
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(canonicalize_name(r.name), frozenset(r.extras)) for r in roots]
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        for req in _requirements(installed[name]) if name in installed else []:
            wanted = extras or {""}
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in wanted):
                todo.append((canonicalize_name(req.name), frozenset(req.extras)))
    return {name for name, _ in seen}


def imports(source: Path) -> Iterator[tuple[str, int]]:
    """(top-level module, line) of every absolute import in a file."""
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name.split(".")[0], node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


@pytest.mark.slow  # parses every module of 43 distributions (4.5 CPU-s)
def test_every_distribution_declares_what_it_imports(repo_distributions) -> None:
    """A module of a distribution imports only what installing it brings (its requirements,
    followed) or one of its extras. Kit and recipe modules run in the agent's workspace and
    import what is copied beside them there (their siblings, ``autorl_kit``, the recipe's
    helpers): modules no installed distribution provides are theirs."""
    installed = {canonicalize_name(d.metadata["Name"]): d for d in md.distributions()}
    providers = {
        m: {canonicalize_name(d) for d in ds} for m, ds in md.packages_distributions().items()
    }
    missing = []
    for name, dist in repo_distributions.items():
        extras = [r for reqs in dist.extras.values() for r in reqs]
        declared = closure(installed, dist.requires) | closure(installed, extras) | {name}
        declared |= {canonicalize_name(r.name) for r in [*dist.requires, *extras]}
        sources = sorted((dist.path / "src").rglob("*.py"))
        own = {p.stem for p in sources} | {p.parent.name for p in sources}
        for source in sources:
            for module, line in imports(source):
                if module in sys.stdlib_module_names or module in own or module == "__future__":
                    continue
                found = providers.get(module)
                if found is None:  # no installed distribution has it: a workspace module
                    continue  # (autorl_kit, the kit's package, the recipe's helpers)
                if found & declared or (name, module) in UNDECLARED:
                    continue
                where = f"{source.relative_to(REPO)}:{line}"
                missing.append(f"{where} imports {module} ({', '.join(sorted(found))})")
    assert not missing, "declare these in [project].dependencies or an extra:\n" + "\n".join(
        missing
    )


def test_a_task_depends_on_the_evaluator_it_names(repo_distributions) -> None:
    """``pip install autorl-task-X`` brings what scores X."""
    missing = []
    for entry in Registry.from_entry_points().entries("task"):
        if entry.name not in SHIPPED["task"]:
            continue
        task = repo_distributions[canonicalize_name(entry.provider)]
        evaluator = shipped_distribution("evaluator", entry.spec.evaluator or "")
        if evaluator not in {canonicalize_name(r.name) for r in task.requires}:
            missing.append(
                f"{entry.provider} names evaluator {entry.spec.evaluator!r}: {evaluator}"
            )
    assert not missing


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """One session at a time works on the cached venv."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def build_wheels(distributions: Iterable[Path], out: Path) -> dict[str, Path]:
    """Every distribution as a wheel, the way a release builds it; canonical name -> wheel."""
    pip(
        Path(sys.executable),
        "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
        *(str(path) for path in distributions),
    )  # fmt: skip
    return {canonicalize_name(w.name.split("-")[0]): w for w in out.glob("*.whl")}


def venv_key() -> str:
    digest = hashlib.sha256(LOCK.read_bytes())
    digest.update(f"{sys.version_info[:3]} {sys.platform} {os.uname().machine}".encode())
    return digest.hexdigest()[:16]


def install_from_wheels(venv: Path, wheels: dict[str, Path], tmp: Path) -> set[str]:
    """The four roots from ``wheels`` (autorl's distributions: these files, never an index's),
    third-party libraries at the lock's versions; returns the distributions installed."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    stale = [
        d["name"]
        for d in json.loads(pip(python, "list", "--format=json"))
        if canonicalize_name(d["name"]).startswith("autorl")
    ]
    if stale:  # an earlier session's wheels: this checkout's must be the ones installed
        pip(python, "uninstall", "-q", "-y", *stale)
    # autorl's distributions at the wheels' versions, found beside them (a direct-URL
    # constraint would not apply to a requirement with extras: autorl-task-common[bm25])
    constraints = tmp / "constraints.txt"
    constraints.write_text(
        LOCK.read_text()
        + "".join(f"{n}=={w.name.split('-')[1]}\n" for n, w in sorted(wheels.items()))
    )
    wheel_dir = str(next(iter(wheels.values())).parent)
    pip(python, "install", "-q", "--find-links", wheel_dir, "-c", str(constraints), TORCH, *ROOTS)
    site = json.loads(
        subprocess.check_output(
            [str(python), "-c", "import json, site; print(json.dumps(site.getsitepackages()))"],
            text=True,
        )
    )
    installed = {canonicalize_name(d.metadata["Name"]): d for d in md.distributions(path=site)}
    needed = closure(installed, [Requirement(r) for r in (TORCH, *ROOTS)]) | KEEP
    extra = sorted(set(installed) - needed)
    if extra:  # left by an earlier lock's install: would hide a missing dependency
        pip(python, "uninstall", "-q", "-y", *extra)
    pip(python, "check")
    for name in needed & set(wheels):  # these wheels, not an index's release of that version
        with zipfile.ZipFile(wheels[name]) as wheel:
            built = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
            assert installed[name].read_text("METADATA") == wheel.read(built).decode(), name
    return needed & set(installed)


@pytest.mark.e2e
def test_the_four_distribution_install_runs_webshop_from_wheels(
    repo_distributions, tmp_path: Path
) -> None:
    wheels = build_wheels([d.path for d in repo_distributions.values()], tmp_path / "wheels")
    assert set(wheels) == set(repo_distributions), "a distribution built no wheel"
    venv = cache_dir("wheel-venvs") / venv_key()
    with locked(venv.with_suffix(".lock")):
        installed = install_from_wheels(venv, wheels, tmp_path)
        assert {"autorl-runner", "autorl-analysis", "autorl-evaluator-rollout"} <= installed
        assert not {"autorl-campaign", "autorl-llm", "autorl-sandbox-local"} & installed
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("AUTORL_", "VIRTUAL_ENV", "PYTHON")) and k != "XDG_CACHE_HOME"
        }
        env |= {
            "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "XDG_CACHE_HOME": str(tmp_path / "cache"),  # the task data and model from these wheels
            "COLUMNS": "200",
        }
        runs = tmp_path / "runs"
        proc = subprocess.run(
            [
                str(venv / "bin" / "autorl"), "run", "--task", "webshop", "--model", "tiny",
                "--budget", "90", "--engine", "transformers", "--runs-dir", str(runs),
                "--agent-option", "phase_seconds=10",  # the install is under test: less training
            ],
            capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
        )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    from autorl_records import load_run, scoring

    [run_dir] = [path for path in runs.iterdir() if path.is_dir()]
    record = load_run(run_dir)
    assert record.status == "completed", out
    assert record.submissions, out  # the scripted agent trained and submitted from the wheels
    assert scoring(record)["score"] is not None, out
    assert (run_dir / "report" / "report.md").is_file()
    assert (run_dir / "contributions" / "analysis.json").is_file()
