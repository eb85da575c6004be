"""Every test here runs against a Docker daemon: the running one, or a private one started for
the session (see :mod:`autorl_sandbox_docker.testing`); skipped, naming the install command,
when there is none."""

from __future__ import annotations

import pytest
from autorl_sandbox_docker.testing import docker_engine

__all__ = ["docker_engine"]


@pytest.fixture(scope="session", autouse=True)
def _docker(docker_engine: str) -> str:
    return docker_engine
