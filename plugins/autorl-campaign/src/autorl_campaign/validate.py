"""Every cell checked before any runs: names against the registry, options against each
component's options model, the agent against its task, the device, the driver built (so a
missing key fails now, not hours later).

The same resolution `autorl run` does before its run directory exists
(:func:`autorl_runner.setup.resolve`) runs for each distinct combination of components and
options. Nothing is prepared or evaluated: a 16-cell check takes seconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from autorl.config import RunConfig
from autorl.errors import AutorlError
from autorl_campaign.spec import Campaign, Cell

Problem = tuple[str, str | None]
"""What is wrong, and how to fix it (the error's hint)."""


def _memo(cache: dict[str, Problem | None], key: Any, check: Callable[[], None]) -> Problem | None:
    """Run ``check`` once per distinct key; the problem, or None when it passed."""
    k = json.dumps(key, sort_keys=True, default=str)
    if k not in cache:
        try:
            check()
            cache[k] = None
        except AutorlError as exc:
            cache[k] = (exc.message, exc.hint)
    return cache[k]


def check_cell(config: RunConfig, registry: Any, cache: dict[str, Problem | None]) -> list[Problem]:
    """The problems of one cell's config (empty when it would start): what ``autorl run``
    checks before its run directory exists (:func:`autorl_runner.setup.resolve`: the names,
    the task's, evaluator's and agent's options, the agent against the task, the device), once
    per distinct combination."""
    from autorl_runner.setup import resolve

    checked = (
        config.task,
        config.agent,
        config.model,
        config.sandbox,
        config.reports,
        config.driver,
        config.driver_options,
        config.egress.policy,
        config.task_options,
        config.agent_options,
        config.evaluator_options,
        config.device,
    )
    problem = _memo(cache, ("resolve", checked), lambda: resolve(config, registry))
    return [problem] if problem else []


def check_campaign(campaign: Campaign, registry: Any = None) -> list[tuple[Cell, Problem]]:
    """(cell, problem) for every problem of every cell, in cell order."""
    from autorl.registry import get_registry

    registry = registry or get_registry()
    cache: dict[str, Problem | None] = {}
    found = []
    for cell in campaign.cells:
        config = RunConfig.model_validate(cell.config)
        for problem in check_cell(config, registry, cache):
            found.append((cell, problem))
    return found


def problems_text(campaign: Campaign, found: list[tuple[Cell, Problem]]) -> str:
    """Problems grouped by message, each with the cells it affects (number, axes, id)."""
    by_message: dict[str, list[Cell]] = {}
    hints: dict[str, str | None] = {}
    for cell, (message, hint) in found:
        by_message.setdefault(message, []).append(cell)
        hints.setdefault(message, hint)
    total = len(campaign.cells)
    cells = {c.cell_id for c, _ in found}
    lines = [
        f"campaign {campaign.path}: {len(by_message)} problem(s) in {len(cells)} of {total} "
        "cell(s); nothing was run:"
    ]
    for message, affected in by_message.items():
        lines.append(f"- {message}")
        for cell in affected[:8]:
            lines.append(
                f"    in cell {cell.position + 1} of {total} {cell.label} [{cell.cell_id}]"
            )
        if len(affected) > 8:
            lines.append(f"    and {len(affected) - 8} more cell(s)")
        hint = hints[message]
        if hint:
            lines.append("    fix: " + (hint if len(hint) <= 300 else hint[:297] + "..."))
    return "\n".join(lines)
