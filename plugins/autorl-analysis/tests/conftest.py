"""Real runs for the analysis tests: ``autorl run`` with the tiny model on a small GSM8K split.

The misbehaving test agents (``tests/agents``) reach ``autorl run`` the way an installed plugin
does: a ``.dist-info`` with their entry point, written here, on ``PYTHONPATH``. Runs share one
cache (task splits, the tiny model, the baseline, the agent runtime) to stay short.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from autorl_testing.runs import installed_plugin

AUTORL = str(Path(sys.executable).parent / "autorl")
AGENTS = Path(__file__).resolve().parent / "agents"
SMALL = ("--task-option", "train_size=40", "--task-option", "eval_size=8")


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("analysis-runs")
    installed_plugin(
        root / "site", "autorl-analysis-testagents", "autorl_analysis_testagents.plugin"
    )
    return root


def run_env(root: Path) -> dict[str, str]:
    paths = [str(AGENTS), str(root / "site"), os.environ.get("PYTHONPATH", "")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTORL_")}
    env.update(
        PYTHONPATH=os.pathsep.join(p for p in paths if p),
        AUTORL_CACHE=str(root / "cache"),
        HF_HUB_OFFLINE="1",
        COLUMNS="200",
    )
    return env


@pytest.fixture(scope="session")
def autorl_run(runs_root: Path) -> Callable[..., tuple[Path, subprocess.CompletedProcess[str]]]:
    """``autorl_run(run_id, *flags)`` -> (run directory, the finished process); one run per id
    per session (a second call returns the first run)."""
    done: dict[str, tuple[Path, subprocess.CompletedProcess[str]]] = {}

    def run(run_id: str, *flags: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
        if run_id not in done:
            started = time.monotonic()
            proc = subprocess.run(
                [AUTORL, "run", "--task", "gsm8k", "--model", "tiny", "--sandbox", "local",
                 "--runs-dir", str(runs_root / "runs"), "--run-id", run_id, *SMALL, *flags],
                env=run_env(runs_root),
                capture_output=True,
                text=True,
                timeout=300,
            )  # fmt: skip
            print(f"run {run_id}: {time.monotonic() - started:.1f}s")
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            done[run_id] = (runs_root / "runs" / run_id, proc)
        return done[run_id]

    return run


@pytest.fixture(scope="session")
def env_for(runs_root: Path) -> dict[str, str]:
    return run_env(runs_root)


# headless Chromium for report.html (autorl_testing.browser) ----------------------------------


@contextmanager
def open_page(page: Path) -> Iterator[tuple[Any, list[dict[str, Any]]]]:
    """``(driver, SEVERE console entries)`` with ``page`` loaded from disk (no server)."""
    from autorl_testing.browser import headless_chromium
    from autorl_testing.browser import open_page as load

    with headless_chromium("pip install -e './plugins/autorl-analysis[test]'") as driver:
        yield driver, load(driver, page)


@pytest.fixture
def chromium() -> Callable[[Path], Any]:
    """``with chromium(page) as (driver, errors)``: see :func:`open_page`."""
    return open_page
