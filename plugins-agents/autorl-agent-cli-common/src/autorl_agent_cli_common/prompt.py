"""The one prompt every CLI agent gets: task, rules, budget and what the workspace holds.

The CLIs run headless, so the whole assignment must be in the first message: nobody answers
questions. The workspace listing saves the agent a few exploratory turns and shows that
``models/base`` and ``data/`` are there.
"""

from __future__ import annotations

from pathlib import Path

from autorl.types import AgentContext

SKIP_DIRS = {".git", "__pycache__", ".cache"}


def workspace_listing(workspace: Path, depth: int = 2, limit: int = 60) -> str:
    """An indented listing of ``workspace`` (``depth`` levels, at most ``limit`` lines)."""
    lines: list[str] = []
    root = Path(workspace)

    def walk(directory: Path, level: int) -> None:
        try:
            entries = sorted(directory.iterdir(), key=lambda p: (not p.is_dir(), p.name))
        except OSError:
            return
        for entry in entries:
            if entry.name in SKIP_DIRS:
                continue
            if len(lines) >= limit:
                return
            is_dir = entry.is_dir()
            link = " -> (read-only link)" if entry.is_symlink() else ""
            lines.append(f"{'  ' * level}{entry.name}{'/' if is_dir else ''}{link}")
            if is_dir and level + 1 < depth:
                walk(entry, level + 1)

    walk(root, 0)
    if len(lines) >= limit:
        lines.append("  ...")
    return "\n".join(lines) or "(empty)"


def budget_line(ctx: AgentContext) -> str:
    minutes = ctx.budget_seconds / 60
    return (
        f"Budget: {minutes:.1f} minutes of wall-clock time ({ctx.budget_seconds:.0f} s) and at "
        f"most {ctx.max_submissions} submissions. Every process you start is stopped at the "
        "deadline, so submit a checkpoint early and improve it afterwards."
    )


def build_prompt(ctx: AgentContext, extra: str = "") -> str:
    """The task description, the harness's instructions, the workspace and the budget."""
    workspace = Path(ctx.workspace)
    parts = [
        "You are an autonomous ML engineer working headless: nobody will answer questions, "
        "so decide and act on your own until the work is done.",
        f"Your working directory is {workspace}. Task: {ctx.task}.",
        budget_line(ctx),
        f"The grading API is at $AUTORL_GRADER_URL ({ctx.grader_url}); its bearer token is in "
        "$AUTORL_TOKEN.",
        "## Task description\n\n" + ctx.description.strip(),
        ctx.instructions.strip(),
        "## Workspace listing\n\n```\n" + workspace_listing(workspace) + "\n```",
    ]
    if extra.strip():
        parts.append(extra.strip())
    parts.append("When you have submitted your best checkpoint, stop.")
    return "\n\n".join(parts) + "\n"
