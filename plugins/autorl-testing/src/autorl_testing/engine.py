"""The vLLM CPU engine's tests: skipped where its environment is not built, failed where it must
be (``make test`` builds it and sets ``AUTORL_REQUIRE_ENGINE=1``, so CI never skips them)."""

from __future__ import annotations

import os

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
