"""Every cell checked before any runs: names against the registry, options against each
component's options model, the driver built (so a missing key fails now, not hours later).

The same resolution `autorl run` does before its baseline (:func:`autorl_runner.setup.resolve`)
runs for each distinct combination of components; option tables are checked with the models
the components declare (``Options``). Nothing is prepared or evaluated: a 16-cell check takes
seconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from autorl.config import RunConfig
from autorl.errors import AutorlError
from autorl.options import OptionsModel, parse_options
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


def _options_model(component: Any) -> type[OptionsModel] | None:
    model = getattr(component, "Options", None)
    return model if isinstance(model, type) and issubclass(model, OptionsModel) else None


def check_cell(config: RunConfig, registry: Any, cache: dict[str, Problem | None]) -> list[Problem]:
    """The problems of one cell's config (empty when it would start)."""
    from autorl_runner.setup import resolve

    problems: list[Problem] = []
    components = (
        config.task,
        config.agent,
        config.model,
        config.sandbox,
        config.reports,
        config.driver,
        config.driver_options,
        config.egress.policy,
    )
    problem = _memo(cache, ("resolve", components), lambda: resolve(config, registry))
    if problem:
        return [problem]  # the names are wrong: their options cannot be checked

    def task_options() -> None:
        model = _options_model(registry.create("task", config.task))
        if model is not None:
            parse_options(model, config.task_options, who=f"task {config.task!r}")

    def agent_options() -> None:
        agent = registry.create("agent", config.agent)
        model = _options_model(agent)
        if model is not None:
            parse_options(model, config.agent_options, who=f"agent {config.agent!r}")
        elif hasattr(agent, "check_options"):
            agent.check_options(config.agent_options)

    def evaluator_options() -> None:
        if not config.evaluator_options:
            return
        name = registry.get("task", config.task).spec.evaluator
        model = _options_model(registry.create("evaluator", name)) if name else None
        if model is None:
            return
        unknown = sorted(set(config.evaluator_options) - set(model.model_fields))
        if unknown:
            from autorl.errors import ConfigError

            raise ConfigError(
                f"evaluator {name!r}: unknown option(s) {', '.join(unknown)}",
                hint=f"options of {name!r}: {', '.join(sorted(model.model_fields))}",
            )

    for what, options, check in (
        ("task", config.task_options, task_options),
        ("agent", config.agent_options, agent_options),
        ("evaluator", config.evaluator_options, evaluator_options),
    ):
        name = getattr(config, what, None) or config.task
        problem = _memo(cache, (what, name, options), check)
        if problem:
            problems.append(problem)
    return problems


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
