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


def instructions(
    *,
    task: str,
    metric: str,
    budget_seconds: float,
    max_submissions: int,
    grader_url: str,
    has_kit: bool,
    protocol: str = "sealed",
    split_sizes: Mapping[str, int] | None = None,
) -> str:
    """The agent's rules and the grading API, generated from the run's real settings; under
    ``sealed`` they say that the scores it reads are dev scores and how its score is made."""
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
        scoring = """## Your score
Your run's score is the **sealed test score of one selected checkpoint**: the submission you
declare final (`"final": true` on `POST /submit`, or `POST /final`), if it is scored; if you
declare none (or it failed), the one with the best dev score (ties: the later). After your
phase the grader evaluates that checkpoint and the base model on the test split, which no
submission is scored on before and no answer reports. The gap between the selected
checkpoint's dev and test scores is reported too: climbing the dev split does not pay.
"""
        final_api = (
            '- `POST /final` with JSON `{"submission_id": 3}`: declare an earlier submission '
            "your final checkpoint\n  (it must exist and not have failed; the last declaration "
            "counts).\n"
        )
        scores = "dev score"
    else:
        goal = (
            f"Improve the base model's **{metric}** on a held-out evaluation split that you "
            "cannot see."
        )
        scoring = (
            "Your score is the best score among your valid submissions, measured by the grader.\n"
        )
        final_api = ""
        scores = "score"
    return f"""# Instructions

You are post-training a language model for the task **{task}** (see `description.md`).
{goal}

## Budget
- Wall clock: **{minutes:.1f} minutes** ({budget_seconds:.0f} s) from your start. At the deadline
  every process you started is stopped.
- Submissions: at most **{max_submissions}** (re-submitting identical weights is free).
- Warnings come at 50 % and 90 % of the time in `GET /budget` and in the
  `X-Autorl-Budget-Warning` response header.

## Workspace
- `code/`: write your code here (it is snapshotted at every submission).
- `data/`: the training split (read-only).
- `models/base/`: the base model, a Hugging Face directory (read-only; do not modify it).
- `output/`: save checkpoints here, one directory each (e.g. `output/v1`).
{kit}- The evaluation data is not in the workspace and is never sent to you.

## Grading API
Base URL in `$AUTORL_GRADER_URL` (now {grader_url}); send `Authorization: Bearer $AUTORL_TOKEN`.
- `POST /submit` with JSON `{{"model_path": "output/v1", "wait": true}}`: evaluate a checkpoint;
  add `"final": true` to declare it your final one.
  A checkpoint is a full model directory (`model.save_pretrained` + `tokenizer.save_pretrained`)
  or a PEFT LoRA adapter directory (merged onto the base model by the grader).
{final_api}- `GET /submissions`, `GET /submissions/{{id}}`: status (`received`: being copied and
  checked, `queued`, `evaluating`, `scored`, `failed`, `duplicate`), {scores}, baseline score,
  improvement, reason, `final` (whether it is your declared final one). A checkpoint far larger
  than the base model is refused unread.
- `GET /budget`: time left, submissions used, warnings, `final` (the declared submission).
- `GET /health`; the schema at `/openapi.json`.

Example:

    curl -s -X POST "$AUTORL_GRADER_URL/submit" -H "Authorization: Bearer $AUTORL_TOKEN" \\
         -H 'Content-Type: application/json' -d '{{"model_path": "output/v1", "wait": true}}'

{scoring}"""
