"""Build the agent's workspace: the only directory the agent is told about.

``data/`` and ``kit/`` are copies made read-only; ``models/base`` is a link to the converted model
in the user cache (never a copy of the weights). File permissions do not bind a root agent, so the
engine also re-hashes the base model after the run and flags any change.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autorl.types import PreparedTask

READ_ONLY_FILE = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
READ_ONLY_DIR = READ_ONLY_FILE | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH


def make_read_only(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            os.chmod(Path(dirpath) / name, READ_ONLY_FILE)
        os.chmod(dirpath, READ_ONLY_DIR)


def make_writable(root: Path) -> None:
    """Undo :func:`make_read_only` so a run directory can be deleted."""
    if not root.exists():
        return
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, stat.S_IRWXU)
        for name in filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


def build_workspace(workspace: Path, prepared: PreparedTask, base_model: Path) -> None:
    for sub in ("code", "output", "models"):
        (workspace / sub).mkdir(parents=True, exist_ok=True)
    data = workspace / "data"
    data.mkdir()
    for src in prepared.train_files:
        shutil.copyfile(src, data / src.name)
    make_read_only(data)
    if prepared.kit_dir is not None:
        shutil.copytree(
            prepared.kit_dir,
            workspace / "kit",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        make_read_only(workspace / "kit")
    (workspace / "models" / "base").symlink_to(base_model.resolve(), target_is_directory=True)
    (workspace / "description.md").write_text(prepared.description.rstrip() + "\n")


def _engine_line(engine: Any) -> str:
    """The runtime's inference engine (:class:`autorl_runner.engine.AgentEngine`), if any."""
    if engine is None:
        return ""
    return (
        f"- `$AUTORL_VLLM_PYTHON`: a Python with {engine.name} {engine.version} (read-only), for "
        "fast rollouts: start its OpenAI-compatible server yourself (`$AUTORL_VLLM_PYTHON -m "
        "vllm.entrypoints.openai.api_server --model DIR --uds SOCKET`); it runs on your cores.\n"
    )


def instructions(
    *,
    task: str,
    metric: str,
    budget_seconds: float,
    has_kit: bool,
    grading: Mapping[str, str],
    protocol: str = "sealed",
    split_sizes: Mapping[str, int] | None = None,
    engine: Any = None,
) -> str:
    """The agent's rules, generated from the run's real settings; the run's grader supplies
    what is its own (``Grader.instructions``: ``budget`` lines, the ``api`` and the ``score``
    sections). Under ``sealed`` the goal says that the scores it reads are dev scores."""
    minutes = budget_seconds / 60
    kit = (
        "- `kit/autorl_kit.py`: the task's train-split loader and train-time reward "
        "(`PYTHONPATH` already points at `kit/`).\n"
        if has_kit
        else ""
    )
    sizes = dict(split_sizes or {})
    if protocol == "sealed":
        dev = f" ({sizes['dev']} examples)" if "dev" in sizes else ""
        test = f" ({sizes['test']} examples)" if "test" in sizes else ""
        goal = (
            f"Improve the base model's **{metric}** on held-out data that you cannot see. It is\n"
            f"split in two: a **dev** split{dev}, on which every submission is scored (the "
            "scores\nyou read), and a sealed **test** split" + test + ", used once, after your "
            "time is up."
        )
    else:
        goal = (
            f"Improve the base model's **{metric}** on a held-out evaluation split that you "
            "cannot see."
        )
    return f"""# Instructions

You are post-training a language model for the task **{task}** (see `description.md`).
{goal}

## Budget
- Wall clock: **{minutes:.1f} minutes** ({budget_seconds:.0f} s) from your start. At the deadline
  every process you started is stopped.
{grading["budget"]}
## Workspace
- `code/`: write your code here (it is snapshotted at every submission).
- `data/`: the training split (read-only).
- `models/base/`: the base model, a Hugging Face directory (read-only; do not modify it).
- `output/`: save checkpoints here, one directory each (e.g. `output/v1`).
{kit}{_engine_line(engine)}- The evaluation data is not in the workspace and is never sent to you.

{grading["api"]}
{grading["score"]}"""
