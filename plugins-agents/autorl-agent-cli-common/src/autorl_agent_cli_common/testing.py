"""Helpers for the CLI adapters' tests: a run-like context without installing any CLI."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from autorl.types import AgentContext


def cli_context(tmp_path: Path, driver: str = "openai/gpt-5.2", **options: Any) -> AgentContext:
    """A workspace and HOME under ``tmp_path``; ``executable`` defaults to ``echo`` so
    ``launch`` builds the command without installing the real CLI."""
    workspace = tmp_path / "workspace"
    for sub in ("code", "data", "output", "models"):
        (workspace / sub).mkdir(parents=True, exist_ok=True)
    (workspace / "description.md").write_text("Train the model.\n")
    return AgentContext(
        workspace=workspace,
        home=tmp_path / "home",
        task="gsm8k",
        description="Train the model.",
        instructions="# Instructions\nSubmit to the grading API.",
        grader_url="http://127.0.0.1:5000",
        token="run-token",
        budget_seconds=300,
        max_submissions=3,
        driver=driver,
        gateway_url="http://127.0.0.1:6000",
        python=sys.executable,
        options={"executable": "echo", **options},
    )
