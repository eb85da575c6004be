"""The lock (constraints.txt) covers every library the repo's distributions require, and is used.

A new dependency in any ``pyproject.toml`` without a pin fails here, so two clones a week apart
cannot grade with different library versions (docs/installing.md). ``make lock`` fixes it.
"""

from __future__ import annotations

import importlib.metadata as md
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints.txt"
FIX = "pip install the dependency, then `make lock` (tools/lock.py) and commit constraints.txt"


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock() -> tuple[dict[str, str], set[str]]:
    """Pins (name -> version) and the names the lock says it leaves out on purpose."""
    pins: dict[str, str] = {}
    outside: set[str] = set()
    for line in LOCK.read_text().splitlines():
        if line.startswith("# outside the lock: "):
            outside.add(canonical(line.removeprefix("# outside the lock: ").split(":", 1)[0]))
        elif line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version, f"constraints.txt: {line!r} is not an exact name==version pin"
            assert canonical(name) not in pins, f"constraints.txt pins {name} twice"
            pins[canonical(name)] = version
    return pins, outside


def requirements() -> list[tuple[str, Requirement, str]]:
    """(pyproject, requirement, extra) for every third-party requirement of every distribution
    whose marker holds on this platform."""
    found = []
    for path in sorted([*ROOT.glob("*/pyproject.toml"), *ROOT.glob("*/*/pyproject.toml")]):
        project = tomllib.loads(path.read_text()).get("project")
        if project is None:
            continue
        groups = {"": project.get("dependencies", []), **project.get("optional-dependencies", {})}
        for extra, lines in groups.items():
            for line in lines:
                req = Requirement(line)
                if canonical(req.name).startswith("autorl"):
                    continue
                if req.marker is None or req.marker.evaluate({"extra": extra}):
                    found.append((str(path.relative_to(ROOT)), req, extra))
    return found


def test_every_third_party_requirement_is_pinned_and_the_pin_fits() -> None:
    pins, outside = read_lock()
    reqs = requirements()
    assert len(reqs) > 40, "no pyproject.toml found: is the test run from the repo?"
    missing, unfit = [], []
    for where, req, extra in reqs:
        name = canonical(req.name)
        if name in outside:
            continue
        where = f"{where}{f' [{extra}]' if extra else ''}: {req}"
        if name not in pins:
            missing.append(where)
        elif not req.specifier.contains(Version(pins[name]), prereleases=True):
            unfit.append(f"{where} (locked {pins[name]})")
    assert not missing, f"required but not in constraints.txt: {missing}; {FIX}"
    assert not unfit, f"the lock's version does not satisfy: {unfit}; {FIX}"


def test_the_lock_pins_only_third_party_libraries_at_their_installed_versions() -> None:
    pins, outside = read_lock()
    assert "vllm" in outside and "torch" in pins and "pytest" in pins
    assert not [n for n in pins if n.startswith("autorl")], "first-party distributions in the lock"
    drift = []
    for name, version in pins.items():
        try:
            have = md.version(name)
        except md.PackageNotFoundError:
            drift.append(f"{name} (locked {version}, not installed)")
            continue
        if Version(Version(have).public) != Version(version):
            drift.append(f"{name} (locked {version}, installed {have})")
    assert not drift, (
        f"this environment does not match constraints.txt: {drift}; `make setup` installs the "
        "lock (or, to change it on purpose, `make lock` and commit the new constraints.txt)"
    )


def test_every_pip_install_in_the_makefile_takes_the_lock() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "PIP_LOCKED = $(BIN)/python -m pip install -q -c constraints.txt" in makefile
    commands = [row for row in makefile.splitlines() if not row.lstrip().startswith("#")]
    loose = [row for row in commands if "pip install" in row and "-c constraints.txt" not in row]
    assert not loose, f"a Makefile install outside the lock: {loose}; use $(PIP_LOCKED)"
    assert any(row.strip().startswith("$(PIP_LOCKED) --no-build-isolation") for row in commands)
