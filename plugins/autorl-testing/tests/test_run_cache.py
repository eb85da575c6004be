"""The test session's shared cache: what runs only read is built once per session, what a
test asserts on (its baselines) stays its own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from autorl_testing.runs import SHARED_CACHE_ENV, SHARED_PARTS, run_cache


def test_the_session_has_one_shared_cache_every_worker_sees() -> None:
    shared = os.environ.get(SHARED_CACHE_ENV)
    assert shared and Path(shared).is_dir(), "the pytest plugin made no shared cache"
    assert Path(shared).name.startswith("autorl-test-cache-")


def test_a_runs_cache_links_what_runs_only_read_and_keeps_the_rest_its_own(
    tmp_path: Path,
) -> None:
    shared = Path(os.environ[SHARED_CACHE_ENV])
    cache = run_cache(tmp_path)
    assert cache == tmp_path / "cache"
    for part in SHARED_PARTS:
        assert (cache / part).is_symlink() and (cache / part).resolve() == shared / part
    assert run_cache(tmp_path) == cache  # again: the links are kept
    (cache / "baselines").mkdir()
    assert not (cache / "baselines").resolve().is_relative_to(shared)


def test_outside_a_session_the_cache_is_the_runs_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SHARED_CACHE_ENV)
    cache = run_cache(tmp_path)
    assert cache.is_dir() and not any(cache.iterdir())
