"""Write ``constraints.txt``: the lock of every library the repo's distributions install.

``make lock`` runs it in the dev environment (``.venv``). It starts from what
``requirements-dev.txt`` installs (each ``-e`` distribution with its extras, the tools) plus
what the Makefile installs around it (torch, the build backend, pip itself), follows every
``Requires-Dist`` whose marker holds here through the installed metadata, and pins each
third-party distribution it reaches at its installed version. Nothing else in the environment
(a package installed by hand) gets in; a requirement that is not installed is an error, not a
silent gap. Local version labels are dropped (``torch==2.13.0``, not ``+cpu``): the build
depends on the machine's index, the version does not.

Why pinned constraints and not a uv lock: docs/installing.md.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
MAKEFILE_EXTRAS = ("torch", "hatchling", "editables", "setuptools", "wheel", "pip")
"""Installed by the Makefile outside requirements-dev.txt."""
OUTSIDE = {
    "vllm": "GPU-only extras autorl-hf[vllm], autorl-driver-vllm[serve]; it pins another "
    "transformers: an environment of its own (docs/engine.md)",
}
"""Requirements of the repo's distributions that the dev environment does not install, and why."""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def roots(requirements: Path) -> list[Requirement]:
    """The requirements ``requirements-dev.txt`` and the Makefile install, with extras."""
    found = [Requirement(name) for name in MAKEFILE_EXTRAS]
    for raw in requirements.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-e "):
            target = line[3:].strip()
            path, _, extras = target.partition("[")
            project = tomllib.loads((ROOT / path / "pyproject.toml").read_text())["project"]
            found.append(Requirement(f"{project['name']}[{extras}" if extras else project["name"]))
        else:
            found.append(Requirement(line))
    return found


def pins(requirements: Path) -> dict[str, str]:
    """Third-party distribution -> installed version, over the closure of :func:`roots`."""
    installed = {canonical(d.metadata["Name"]): d for d in md.distributions() if d.metadata["Name"]}
    chosen: dict[str, str] = {}
    done: set[tuple[str, str]] = set()
    stack = [(canonical(r.name), tuple(r.extras)) for r in roots(requirements)]
    while stack:
        name, extras = stack.pop()
        if name in OUTSIDE:
            continue
        if name not in installed:
            sys.exit(
                f"lock: {name} is required but not installed in {sys.prefix}: run `make setup`"
            )
        dist = installed[name]
        if not name.startswith("autorl"):
            chosen[name] = dist.version.split("+", 1)[0]
        for extra in ("", *extras):
            if (name, extra) in done:
                continue
            done.add((name, extra))
            for line in dist.requires or []:
                req = Requirement(line)
                env = {"extra": extra}
                if req.marker is not None and not req.marker.evaluate(env):
                    continue
                if req.marker is None and extra:
                    continue  # followed with the plain requirements
                stack.append((canonical(req.name), tuple(req.extras)))
    return dict(sorted(chosen.items()))


def render(locked: dict[str, str]) -> str:
    from autorl.digest import installed_digest

    head = [
        "# The lock: every third-party library of the repo's distributions, pinned (`make lock`",
        "# writes it from .venv with tools/lock.py; the Makefile installs with -c constraints.txt)",
        f"# Resolved on Python {sys.version_info.major}.{sys.version_info.minor}, {sys.platform}.",
        "# The environment it was made from (a run manifest's lock.sha256 is equal when the run's",
        "# libraries are exactly these; docs/installing.md):",
        f"# environment: {installed_digest()['sha256']}",
        *(f"# outside the lock: {name}: {why}" for name, why in OUTSIDE.items()),
    ]
    return "\n".join([*head, *(f"{n}=={v}" for n, v in locked.items())]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requirements", type=Path, default=ROOT / "requirements-dev.txt")
    parser.add_argument("--output", type=Path, default=ROOT / "constraints.txt")
    args = parser.parse_args()
    locked = pins(args.requirements)
    args.output.write_text(render(locked))
    print(f"{args.output}: {len(locked)} pins")


if __name__ == "__main__":
    main()
