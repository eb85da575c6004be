"""Repo-wide test layout: which tests are end-to-end, and which must share one xdist worker.

``make check`` runs ``-m "not e2e and not slow"`` (the fast loop); ``make test`` runs
everything, in parallel with ``pytest-xdist --dist loadgroup``. This hook gives each test the
marks that follow from what it uses, so a test author marks nothing by hand for these cases:

- ``e2e``: the test starts a Docker daemon, a vLLM engine, a Ray cluster, a browser, installs
  the agent CLIs or launches real ``autorl run``s through a shared fixture (modules that launch
  runs themselves say ``pytestmark = pytest.mark.e2e``).
- ``xdist_group``: tests that must run on one worker: everything that uses the Docker daemon
  (one private ``dockerd`` per session, not one per worker), the vLLM engine (one engine's
  memory at a time), and every test that uses a module- or class-scoped fixture (its module
  stays on one worker, so a run shared by a module fixture is made once, not once per worker).
  The analysis tests' session-scoped ``autorl_run`` keeps its runs by id across modules: they
  are one group.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

E2E_FIXTURES = frozenset({"docker_engine", "installed_clis", "autorl_run", "chromium", "open_run"})
"""Fixtures that start a service or launch real runs (``open_run``: the red-team script's full
run against a live grader): a test using one is ``e2e``."""

E2E_PATHS = (
    "plugins/autorl-executor-ray/tests/",  # a Ray instance in a network namespace
    "plugins/autorl-hf/tests/test_engine.py",  # the vLLM CPU engine
    "plugins/autorl-driver-vllm/tests/test_cpu_engine_driver.py",  # a model served on it
    "tests/test_run_on_engine.py",  # a run graded by it
    "tests/test_evaluators_on_engine.py",  # the code and judge evaluators on it
)

GROUP_BY_FIXTURE = {"autorl_run": "analysis-runs"}
GROUP_BY_PATH = {
    "plugins/autorl-hf/tests/test_engine.py": "vllm-engine",
    "plugins/autorl-driver-vllm/tests/test_cpu_engine_driver.py": "vllm-engine",
    "tests/test_run_on_engine.py": "vllm-engine",
    "tests/test_evaluators_on_engine.py": "vllm-engine",
}
SHARED_SCOPES = frozenset({"module", "class", "package"})


def _uses_docker(item: pytest.Item) -> bool:
    """The daemon as a fixture, or a test parametrized over sandboxes at its ``docker`` case
    (it asks for the daemon with ``request.getfixturevalue``)."""
    callspec = getattr(item, "callspec", None)
    return "docker_engine" in item.fixturenames or (
        callspec is not None and callspec.params.get("sandbox") == "docker"
    )


def _group(item: pytest.Item, path: str) -> str | None:
    if _uses_docker(item):
        return "docker"
    for fixture, group in GROUP_BY_FIXTURE.items():
        if fixture in item.fixturenames:
            return group
    for prefix, group in GROUP_BY_PATH.items():
        if path.startswith(prefix):
            return group
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs if info is not None else {}
    if any(d and d[-1].scope in SHARED_SCOPES for d in defs.values()):
        return path  # the module's own group: its shared fixtures are built once
    return None


@pytest.hookimpl(wrapper=True)  # marks before every other hook (xdist reads them), tags after
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    root = config.rootpath
    for item in items:
        try:
            path = item.path.relative_to(root).as_posix()
        except ValueError:
            path = item.path.as_posix()
        if (
            E2E_FIXTURES.intersection(item.fixturenames)
            or _uses_docker(item)
            or path.startswith(E2E_PATHS)
        ):
            item.add_marker(pytest.mark.e2e)
        if item.get_closest_marker("xdist_group") is None:
            group = _group(item, path)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))
    yield
    if hasattr(config, "workerinput") and config.getoption("loadgroup", False):
        _tag_groups(items)


def _tag_groups(items: list[pytest.Item]) -> None:
    """Give each grouped test the ``@group`` id suffix by which xdist's scheduler keeps a group
    on one worker. pytest-xdist 3.8 adds it by assigning ``item._nodeid``, which pytest 9.2's
    nodes no longer read (their id is ``item._id``): without this every group would be spread
    over the workers (a module's shared run made on each). Done only where xdist's did not take."""
    from _pytest.nodeid import NodeId

    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})  # fmt: skip
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)  # type: ignore[attr-defined]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--serial-ids",
        metavar="FILE",
        default=None,
        help="write the ids of the `serial` tests this run deselected to FILE (one per line), "
        "for the serial pass to run as `pytest @FILE` without collecting the whole suite again",
    )


_SERIAL = pytest.StashKey[set[str]]()


def pytest_deselected(items: list[pytest.Item]) -> None:
    """The parallel pass knows which tests are `serial`: the serial pass (``make check``,
    ``make test``) then runs only their modules (collecting the whole suite again took 11 s)."""
    for item in items:
        if item.get_closest_marker("serial"):
            item.config.stash.setdefault(_SERIAL, set()).add(item.nodeid.split("@")[0])


def pytest_collection_finish(session: pytest.Session) -> None:
    path = session.config.getoption("serial_ids", None)
    if path:
        out = Path(path)
        tmp = out.with_name(f".{out.name}.{os.getpid()}")
        tmp.write_text("".join(f"{i}\n" for i in sorted(session.config.stash.get(_SERIAL, ()))))
        tmp.replace(out)  # every worker deselects the same tests: whichever rename is last
