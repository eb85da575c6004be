"""Real runs through the real CLI, for end-to-end tests of a task, an agent or a sandbox.

``autorl run`` in a fresh process is the only honest end-to-end check: entry points, the
sandbox, the grader's HTTP and the report as a user gets them. These helpers name the flags
once and check what every finished run must show::

    done = autorl_run(tmp_path, "mine", task="mine", model="tiny", budget=60)
    summary = completed_summary(tmp_path / "runs" / "mine")
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

AUTORL = str(Path(sys.executable).parent / "autorl")
"""The CLI of the environment the tests run in."""

SHARED_CACHE_ENV = "AUTORL_TEST_SHARED_CACHE"
"""The test session's shared cache directory (made by this package's pytest plugin)."""
SHARED_PARTS = ("models", "runtime", "tasks")
"""What every run builds alike and only reads afterwards: the materialised models, the agent
runtime (1.5 GB of hard links, 6.5 CPU-s to build on 2 cores) and the prepared task data. Each
is keyed by what changes it and built under a lock (the same cache serves concurrent runs on
one machine), so test runs on several xdist workers share them safely."""


def run_cache(root: Path) -> Path:
    """``root/cache`` for a test's runs (``$AUTORL_CACHE``): its baselines and anything else
    its own, so a test still sees its first baseline computed and its second cached, while
    :data:`SHARED_PARTS` link to the session's shared cache (``$AUTORL_TEST_SHARED_CACHE``) and
    are built once per session instead of once per test. Without the variable (outside
    pytest) the whole cache is the test's own. A test that edits the cache, or must see it
    built, makes a cache of its own instead."""
    cache = root / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    shared = os.environ.get(SHARED_CACHE_ENV)
    if shared:
        for part in SHARED_PARTS:
            link = cache / part
            if not link.is_symlink() and not link.exists():
                target = Path(shared) / part
                target.mkdir(parents=True, exist_ok=True)
                link.symlink_to(target, target_is_directory=True)
    return cache


def autorl_run(
    root: Path,
    run_id: str,
    *,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 600,
    check: bool = True,
    **flags: Any,
) -> subprocess.CompletedProcess[str]:
    """``autorl run --<flag> <value>... --runs-dir root/runs --run-id run_id``.

    A flag's underscores become dashes; a list or tuple repeats the flag
    (``task_option=["a=1", "b=2"]``); ``True`` passes it bare. The environment is this one's with
    the cache in ``root/cache`` (:func:`run_cache`) and the hub offline, then ``env`` (``None``
    unsets a variable).
    ``check`` fails the test with
    the output's tail when the run exits non-zero.
    """
    argv = [AUTORL, "run"]
    for key, value in flags.items():
        flag = f"--{key.replace('_', '-')}"
        for item in value if isinstance(value, list | tuple) else [value]:
            argv += [flag] if item is True else [flag, str(item)]
    argv += ["--runs-dir", str(root / "runs"), "--run-id", run_id]
    base = {**os.environ, "AUTORL_CACHE": str(run_cache(root)), "HF_HUB_OFFLINE": "1"}
    merged = {k: v for k, v in {**base, **(env or {})}.items() if v is not None}
    done = subprocess.run(argv, env=merged, capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def completed_summary(run_dir: Path) -> dict[str, Any]:
    """The report's ``summary.json`` of a run that completed with a baseline and at least one
    scored submission (what every successful end-to-end run shows), or the failing assert."""
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["baseline_score"] is not None
    assert summary["submissions"], "the agent submitted nothing"
    assert any(row["status"] == "scored" for row in summary["submissions"]), summary["submissions"]
    return summary


def installed_plugin(site: Path, distribution: str, module: str) -> Path:
    """``site`` holding a ``.dist-info`` for ``distribution`` whose ``autorl.plugins`` entry
    point is ``module``: on ``PYTHONPATH``, a plugin under test (not pip-installed) reaches an
    ``autorl`` subprocess the way an installed one does. Returns ``site``."""
    info = site / f"{distribution.replace('-', '_')}-0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(f"[autorl.plugins]\n{distribution} = {module}\n")
    return site


SEALED_SCORING: dict[str, Any] = {
    "protocol": "sealed",
    "selection": {"submission_id": 1, "rule": "declared"},
    "dev": {"best": 77.5, "selected": 75.0, "selected_se": 6.8, "n": 20},
    "test": {
        "selected": 70.0,
        "selected_se": 7.2,
        "n": 20,
        "baseline": 10.0,
        "baseline_se": 3.0,
        "all": [
            {"submission_id": 1, "score": 70.0, "se": 7.2},
            {"submission_id": 2, "score": 72.5, "se": 7.0},
        ],
    },
    "score": 70.0,
    "score_se": 7.2,
    "baseline": 10.0,
    "baseline_se": 3.0,
    "improvement": 60.0,
    "improvement_se": 7.8,
    "selection_gap": 5.0,
    "selection_gap_se": 9.9,
    "oracle_gap": 2.5,
}
"""run.json's ``scoring`` block after a sealed run: submission #1 (dev 75, dev best 77.5) is
selected and scores 70 ± 7.2 on the sealed test split against a baseline of 10 ± 3."""

CREATED = "2026-01-02T03:04:05.000Z"
"""The ``created`` time :func:`write_run_dir` stamps on a manifest unless told another."""


def write_run_dir(
    run_dir: Path,
    *,
    config: Mapping[str, Any],
    entries: Iterable[Mapping[str, Any]] = (),
    baseline: Mapping[str, Any] | None = None,
    run: Mapping[str, Any] | None = None,
    submissions_tail: str = "",
    **manifest: Any,
) -> Path:
    """A run directory as the engine leaves it, for tests of what reads one (reports, the
    analysis, run listings, campaigns) without running anything.

    ``manifest.json`` holds the directory's name as ``run_id``, :data:`CREATED`, ``config`` and
    then ``manifest`` (which may override ``created``); ``baseline.json`` and ``run.json`` are
    written when given; ``submissions.jsonl`` holds ``entries`` then ``submissions_tail`` as
    raw text (a torn last line, say). Returns ``run_dir``.
    """
    run_dir.mkdir(parents=True)
    record = {"run_id": run_dir.name, "created": CREATED, "config": dict(config), **manifest}
    (run_dir / "manifest.json").write_text(json.dumps(record))
    if baseline is not None:
        (run_dir / "baseline.json").write_text(json.dumps(baseline))
    lines = "".join(json.dumps(entry) + "\n" for entry in entries)
    (run_dir / "submissions.jsonl").write_text(lines + submissions_tail)
    if run is not None:
        (run_dir / "run.json").write_text(json.dumps(run))
    return run_dir
