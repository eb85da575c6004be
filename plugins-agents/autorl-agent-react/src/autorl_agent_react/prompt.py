"""The react agent's first messages: its rules, then the task, the instructions and the budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SYSTEM = """You are an ML engineer working alone in a sandboxed workspace. Your job: post-train \
the base model so it scores better on the task's held-out evaluation, within the budget.
Work in small steps with the tools: inspect the workspace, write training code under code/, run \
it with `shell`, save full checkpoints under output/, `submit` them and read the score back. \
Check the budget now and then. When you are done, answer without calling a tool: that ends the \
session."""

MAX_LISTING = 60


def listing(workspace: Path, depth: int = 2) -> str:
    """The top of the workspace tree (symlinked dirs shown, not followed)."""
    lines: list[str] = []

    def walk(directory: Path, level: int) -> None:
        for path in sorted(directory.iterdir()):
            if len(lines) >= MAX_LISTING:
                return
            name = path.name + ("/" if path.is_dir() else "")
            lines.append("  " * level + name + (" -> (link)" if path.is_symlink() else ""))
            if path.is_dir() and not path.is_symlink() and level + 1 < depth:
                walk(path, level + 1)

    walk(workspace, 0)
    if len(lines) >= MAX_LISTING:
        lines.append("...")
    return "\n".join(lines)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else "(missing)"


def first_messages(workspace: Path, budget: str) -> list[dict[str, Any]]:
    user = (
        "# Task\n\n"
        + _read(workspace / "description.md")
        + "\n\n"
        + _read(workspace / "instructions.md")
        + "\n\n# Workspace\n\n"
        + listing(workspace)
        + "\n\n# Budget now\n\n"
        + budget
        + "\n"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
