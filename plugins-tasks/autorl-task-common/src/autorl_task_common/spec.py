"""The registry spec of a shipped task, for its ``plugin.py``.

What every shipped task's spec says alike lives here once: its reference recipe is the
``recipe/`` directory of its package (what the ``scripted`` agent runs), its description opens
with its level, and its options name the level and the metric. Light: imported when the entry
point loads, it imports only the spec type; never copied into a kit.
"""

from __future__ import annotations

from autorl.specs import TaskSpec


def task_spec(
    name: str,
    factory: str,
    *,
    evaluator: str,
    contract: str,
    level: str,
    metric: str,
    summary: str,
) -> TaskSpec:
    """The spec of task ``name``: ``factory`` is its class (``"package.task:Class"``),
    ``evaluator`` and ``contract`` what scores it, ``level`` (``L1``-``L3``) and ``metric`` what
    the paper reports, ``summary`` the description after the level."""
    package = factory.split(".", 1)[0]
    return TaskSpec(
        name=name,
        factory=factory,
        evaluator=evaluator,
        contract=contract,
        recipe=f"{package}:recipe",  # the scripted agent's reference recipe
        description=f"{level} {summary}",
        options={"level": level, "metric": metric},
    )
