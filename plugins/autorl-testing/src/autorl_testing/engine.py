"""The vLLM CPU engine's tests: skipped where its environment is not built, failed where it must
be (``make test`` builds it and sets ``AUTORL_REQUIRE_ENGINE=1``, so CI never skips them)."""

from __future__ import annotations

import os
from typing import Any

import pytest

REQUIRED = bool(os.environ.get("AUTORL_REQUIRE_ENGINE"))
"""Whether a missing engine is a failure (CI) rather than a skip (a dev machine without it)."""


def engine_built() -> bool:
    """Whether ``autorl engine prepare`` built the engine's environment (needs ``autorl-hf``)."""
    from autorl_hf.engine.env import find_engine

    return find_engine() is not None


needs_engine = pytest.mark.skipif(
    not REQUIRED and not engine_built(),
    reason="the vLLM CPU engine is not built (autorl engine prepare); "
    "AUTORL_REQUIRE_ENGINE=1 makes this a failure",
)
"""Mark a test (or ``pytestmark``) that runs on the engine."""


def graded_by(engine: dict[str, Any]) -> dict[str, Any]:
    """An evaluation's ``metrics.engine`` less the threads the engine computed on, which must be
    some of this machine's cores: the machine's load decides them (one while an agent trains
    beside the grader, more when nothing else runs), and the outputs do not depend on them."""
    threads = engine.get("threads")
    assert threads and set(threads) <= set(range(1, (os.cpu_count() or 1) + 1)), engine
    return {k: v for k, v in engine.items() if k != "threads"}
