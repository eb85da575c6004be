"""Collect a finished run's agent trajectory, from the run directory alone.

Called by the ``autorl_on_run_end`` observer (so every run of a CLI agent gets
``agent_trajectory.jsonl`` without the engine knowing about CLIs) and by
``autorl agent-cli trajectory RUN_DIR``.
"""

from __future__ import annotations

import json
from pathlib import Path

from autorl.errors import AutorlError


def run_agent_name(run_dir: Path) -> str | None:
    try:
        return json.loads((run_dir / "manifest.json").read_text())["config"]["agent"]
    except (OSError, KeyError, TypeError, json.JSONDecodeError):
        return None


def collect_run(run_dir: Path) -> list[Path]:
    """Write the trajectory when the run's agent is a CLI adapter; nothing otherwise."""
    name = run_agent_name(Path(run_dir))
    if name is None:
        return []
    from autorl.registry import get_registry

    try:
        agent = get_registry().create("agent", name)
    except AutorlError:
        return []
    collect = getattr(agent, "collect_from", None)
    if collect is None or not (run_dir / "home").is_dir():
        return []
    return collect(run_dir / "home", run_dir / "workspace", run_dir)
