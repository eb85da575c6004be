"""What the agent gets, checked as the agent sees it: a task's workspace built by the run engine,
its files' text for a leak scan, and its kit run in a fresh interpreter.

A task author checks with these that no held-out row reaches the agent (every eval id and text
absent from every workspace file; the kit's environment refusing every eval id) and that the
kit works on its own (it imports nothing of autorl)::

    with built_workspace(MyTask(), "mine", tmp_path) as (root, prepared):
        texts = workspace_texts(root)
        assert not [p for p, text in texts.items() if "eval-0001" in text]
        assert run_kit(root, REFUSES, json.dumps(["eval-0001"]))["refused"] == 1

and, where the task ships data a script generates, that the two agree (:func:`check_generated`).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

KIT_PRELUDE = "import json, sys\nsys.path.insert(0, 'kit')\nimport autorl_kit as kit\n"
"""What :func:`run_kit` puts before a script: ``json``, ``sys`` and the kit as ``kit``."""

REFUSES = """
env = kit.make_env(); refused = 0
for sid in json.loads(sys.argv[1]):
    try: env.reset(sid)
    except KeyError: refused += 1
env.reset(env.session_ids[0])
print(json.dumps({'refused': refused, 'train': len(env.session_ids)}))
"""
"""A :func:`run_kit` script for an interactive task's kit: how many of the ids in ``argv[1]`` (a
JSON list) its environment refuses to reset to, and how many train sessions it offers."""


@contextlib.contextmanager
def built_workspace(
    task: Any, name: str, root: Path, options: dict[str, Any] | None = None
) -> Iterator[tuple[Path, Any]]:
    """``task`` prepared under ``root/cache`` and its workspace built by the run engine in
    ``root/workspace`` (a stub base model; ``instructions.md`` with the grading API's section and
    ``description.md`` as a run writes them). Yields (workspace, prepared task); the read-only
    parts are made writable again on exit so pytest can remove the directory."""
    from autorl_grading.component import Grading
    from autorl_runner.workspace import build_workspace, instructions, make_writable

    from autorl.types import TaskContext

    prepared = task.prepare(TaskContext(cache_dir=root / "cache", options=options or {}))
    model = root / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    workspace = root / "workspace"
    build_workspace(workspace, prepared, model)
    grading = Grading().instructions(url="http://127.0.0.1:9", max_submissions=3, protocol="sealed")
    (workspace / "instructions.md").write_text(
        instructions(
            task=name,
            metric=prepared.metric,
            budget_seconds=60,
            has_kit=prepared.kit_dir is not None,
            grading=grading,
        )
    )
    (workspace / "description.md").write_text(prepared.description)
    try:
        yield workspace, prepared
    finally:
        make_writable(workspace)


def workspace_texts(root: Path, at_least: int = 10) -> dict[Path, str]:
    """Every regular file under ``root`` (links not followed: ``models/base`` leads outside)
    as lower-cased text, for a scan; fails when fewer than ``at_least`` files are there, so a
    scan of an empty or unbuilt workspace cannot pass."""
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    assert len(files) >= at_least, f"only {len(files)} files under {root}: {files}"
    return {p: p.read_bytes().decode("utf-8", errors="replace").lower() for p in files}


def run_kit(
    workspace: Path, script: str, *args: str, kit_dir: Path | None = None, timeout: float = 120
) -> Any:
    """Run :data:`KIT_PRELUDE` + ``script`` in a fresh interpreter in ``workspace``, as an
    agent's code would; returns the JSON of its last line of output. ``kit_dir`` first links a
    prepared task's kit into a new ``workspace``."""
    if kit_dir is not None:
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / "kit").symlink_to(kit_dir)
    done = subprocess.run(
        [sys.executable, "-c", KIT_PRELUDE + script, *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"the kit script failed in {workspace}:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_generated(script: Path, timeout: float = 120) -> None:
    """``python script --check`` exits 0: the data a task ships is what its generator script
    writes (the script compares them); otherwise the test fails with the script's output."""
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
