"""Every install hint names a distribution that exists (issue #34).

A user who follows a hint must get a distribution of this repository, never a name made from a
component's (``autorl-report-analysis``: the report ``analysis`` is in ``autorl-analysis``). The
hints come from four places, all checked against the repository's ``pyproject.toml`` names:
the registry (a shipped component that is not installed), the CLI (a command whose plugin is
not installed), the run engine's harness services, and the literal ``pip install ...`` text in
the sources, the READMEs and the docs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from autorl_runner.setup import SERVICES, service
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from autorl import registry as registry_module
from autorl.errors import AutorlError
from autorl.kinds import SHIPPED, shipped_distribution
from autorl.registry import Registry

REPO = Path(__file__).resolve().parents[1]
PIP_INSTALL = re.compile(r"pip install\b([^\n`]*)")
ILLUSTRATIVE = {"autorl-task-x", "autorl-task-reverse"}
"""Third parties' distributions in the docs' examples (docs/architecture.md, the example task
of docs/writing-plugins.md), never hints."""
SHIPPED_PAIRS = sorted((kind, name) for kind, names in SHIPPED.items() for name in names)


def named_requirements(text: str) -> list[Requirement]:
    """The ``autorl*`` requirements every ``pip install`` in ``text`` names (options, paths,
    placeholders and other projects' packages are skipped)."""
    found = []
    for match in PIP_INSTALL.finditer(text):
        editable = False  # `pip install -e DIR`: a directory, not a name
        for token in match.group(1).split():
            token, after_e = token.strip("'\"(),;"), editable
            editable = token in ("-e", "--editable")
            if after_e or not token.lower().startswith("autorl") or "{" in token or "/" in token:
                continue
            try:
                found.append(Requirement(token))
            except InvalidRequirement:
                continue
    return found


def unknown(requirements: list[Requirement], distributions: dict) -> list[str]:
    """The requirements naming no repository distribution, or an extra it does not declare."""
    bad = []
    for req in requirements:
        dist = distributions.get(canonicalize_name(req.name))
        if req.name in ILLUSTRATIVE:
            continue
        if dist is None:
            bad.append(f"{req}: no distribution of this repository is named {req.name}")
        elif missing := sorted(set(req.extras) - set(dist.extras)):
            bad.append(f"{req}: {req.name} declares no extra {', '.join(missing)}")
    return bad


def test_the_shipped_table_is_what_the_distributions_register(repo_distributions) -> None:
    """``autorl.kinds.SHIPPED`` (what hints name) against what each installed distribution of
    the repository really registers: both ways, so a moved component fails here."""
    registered = {}
    for kind in SHIPPED:
        for entry in Registry.from_entry_points().entries(kind):
            if canonicalize_name(entry.provider) in repo_distributions:
                registered[(kind, entry.name)] = entry.provider
    table = {(kind, name): dist for kind, names in SHIPPED.items() for name, dist in names.items()}
    assert table == registered
    assert set(table.values()) <= set(repo_distributions)


@pytest.mark.parametrize(("kind", "name"), SHIPPED_PAIRS)
def test_a_shipped_component_that_is_not_installed_names_its_distribution(
    kind: str, name: str, repo_distributions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry_module, "_installed", lambda distribution: False)
    with pytest.raises(AutorlError) as info:
        Registry.empty().get(kind, name)
    hint = str(info.value.hint)
    assert f"pip install {shipped_distribution(kind, name)} " in hint, hint
    assert not unknown(named_requirements(hint), repo_distributions)


def test_the_analysis_report_hint_names_autorl_analysis() -> None:
    """The hint the issue found: ``autorl-report-analysis`` does not exist."""
    with pytest.raises(AutorlError) as info:
        Registry.empty().get("report", "analysis")
    assert "autorl-analysis" in str(info.value.hint)
    assert "autorl-report-analysis" not in str(info.value.hint)


def test_a_name_autorl_does_not_ship_gets_no_pip_command() -> None:
    with pytest.raises(AutorlError) as info:
        Registry.empty().get("task", "my-own-task")
    assert "pip install" not in str(info.value.hint)


@pytest.mark.parametrize("kind", sorted(SERVICES))
def test_a_missing_harness_service_names_its_distribution(kind: str, repo_distributions) -> None:
    default, where = SERVICES[kind]
    assert where.split()[0] == shipped_distribution(kind, default)
    with pytest.raises(AutorlError) as info:
        service(Registry.empty(), kind)
    named = named_requirements(str(info.value.hint))
    assert [r.name for r in named] == [shipped_distribution(kind, default)]
    assert not unknown(named, repo_distributions)


def test_every_spec_install_field_names_a_distribution(repo_distributions) -> None:
    registry = Registry.from_entry_points()
    installs = [
        (f"{entry.kind} {entry.qualified_name}", entry.spec.install)
        for kind in SHIPPED
        for entry in registry.entries(kind)
        if entry.spec.install
    ]
    assert installs, "no spec declares an install requirement: is the venv set up?"
    bad = [
        (where, problem)
        for where, install in installs
        for problem in unknown([Requirement(install)], repo_distributions)
    ]
    assert not bad


def test_every_autorl_requirement_of_a_pyproject_exists(repo_distributions) -> None:
    """What pip resolves from a wheel directory: every ``autorl*`` dependency and extra."""
    bad = [
        f"{dist.path.relative_to(REPO)}/pyproject.toml: {problem}"
        for dist in repo_distributions.values()
        for reqs in (dist.requires, *dist.extras.values())
        for problem in unknown([r for r in reqs if r.name.startswith("autorl")], repo_distributions)
    ]
    assert not bad


def test_every_pip_install_in_the_sources_and_docs_names_a_distribution(
    repo_distributions,
) -> None:
    """The hints written as text: errors raised by the plugins, READMEs, docs."""
    files = [
        *REPO.glob("core/src/**/*.py"),
        *REPO.glob("plugins*/*/src/**/*.py"),
        *REPO.glob("plugins*/*/README.md"),
        *REPO.glob("docs/**/*.md"),
        REPO / "README.md",
    ]
    bad, seen = [], 0
    for path in files:
        requirements = named_requirements(path.read_text(encoding="utf-8"))
        seen += len(requirements)
        bad += [f"{path.relative_to(REPO)}: {p}" for p in unknown(requirements, repo_distributions)]
    assert seen > 20, "found almost no pip install lines: did the layout change?"
    assert not bad


@pytest.mark.parametrize(
    ("blocked", "args", "distribution"),
    [
        ("autorl-analysis", ["show", "report", "analysis"], "autorl-analysis"),
        ("autorl-runner", ["run", "--task", "webshop", "--model", "tiny"], "autorl-runner"),
        ("autorl-campaign", ["campaign", "run", "c.yaml"], "autorl-campaign"),
    ],
)
def test_the_cli_names_the_distribution_of_a_missing_component(
    blocked: str, args: list[str], distribution: str, autorl_env, tmp_path: Path
) -> None:
    """What a user sees: the real console script, the plugin kept from loading."""
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "autorl"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=autorl_env(AUTORL_BLOCK_PLUGINS=blocked),
        cwd=tmp_path,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert f"pip install {distribution}" in out or f"{distribution} is installed" in out, out
    assert "Traceback" not in out and "No such command" not in out, out
