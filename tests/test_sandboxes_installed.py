"""In CI (``AUTORL_REQUIRE_SANDBOXES=1``, set by ``make test``) every sandbox must be able to
run: tests that need one skip when it is missing, and a skip would hide a missing install."""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

REQUIRED = os.environ.get("AUTORL_REQUIRE_SANDBOXES")


@pytest.mark.skipif(not REQUIRED, reason="set AUTORL_REQUIRE_SANDBOXES=1 to require them")
def test_every_sandbox_can_run_here() -> None:
    from autorl.registry import get_registry

    assert shutil.which("bwrap"), "bubblewrap missing: make setup-sandbox"
    assert shutil.which("dockerd"), "Docker engine missing: make setup-docker"
    assert importlib.util.find_spec("autorl_sandbox_docker"), "autorl-sandbox-docker missing"
    get_registry().create("sandbox", "isolated").check()


@pytest.mark.skipif(not REQUIRED, reason="set AUTORL_REQUIRE_SANDBOXES=1 to require them")
def test_the_docker_sandbox_can_run_here(docker_engine: str) -> None:
    from autorl.registry import get_registry

    get_registry().create("sandbox", "docker").check()
