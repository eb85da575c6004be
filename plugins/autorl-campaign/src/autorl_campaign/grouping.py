"""Cells into groups ("stacks") and pairs, the units the statistics compare.

A group is every cell that shares the grouping factors; by default every axis except ``seed``,
so a group is one cell config and its members differ only in seed and replicate. Two groups are
compared on *pairs*: cells with the same task, model, seed, replicate and value of every factor
the grouping leaves out, so a paired difference changes only what distinguishes the groups.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autorl.errors import AutorlError

# Axes that vary *within* a group: the statistics average over them.
WITHIN_GROUP = ("seed", "replicate")
# Factors every cell has from its resolved config, even when the campaign file fixed them.
CORE_FACTORS = ("agent", "driver", "task", "model")
PAIR_BY = ("task", "model", "seed", "replicate")
NO_VALUE = "none"


def _text(value: Any) -> str:
    if value is None:
        return NO_VALUE
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def factors(cell: dict[str, Any]) -> dict[str, str]:
    """The cell's factor values as text: agent, driver, task, model (from the resolved config),
    then the other axes in name order; seed and replicate left out."""
    axes = cell.get("axes") if isinstance(cell.get("axes"), dict) else {}
    found = {name: _text(cell.get(name)) for name in CORE_FACTORS}
    for name in sorted(axes):
        if name not in WITHIN_GROUP and name not in found:
            found[name] = _text(axes[name])
    return found


@dataclass
class Group:
    """Cells sharing the grouping factors, in campaign order."""

    key: tuple[tuple[str, str], ...]
    cells: list[dict[str, Any]] = field(default_factory=list)

    @property
    def factors(self) -> dict[str, str]:
        return dict(self.key)

    @property
    def label(self) -> str:
        """``name=value,...``: the form ``--baseline-group`` accepts."""
        return ",".join(f"{k}={v}" for k, v in self.key) or "all"

    def short_label(self, constant: Iterable[str]) -> str:
        """The values of the factors that vary between groups, joined by " · " (the views print
        which factors once, see :func:`varying_factors`); long paths shortened."""
        skip = set(constant)
        text = " · ".join(shorten(v) for k, v in self.key if k not in skip)
        return text or self.label

    def common(self, name: str) -> str | None:
        """The value of factor ``name`` when all the group's cells share it."""
        values = {factors(c).get(name, NO_VALUE) for c in self.cells}
        return values.pop() if len(values) == 1 else None


def available_factors(cells: Sequence[dict[str, Any]]) -> list[str]:
    names: dict[str, None] = {}
    for cell in cells:
        names.update(dict.fromkeys(factors(cell)))
    return list(names)


def group_cells(cells: Sequence[dict[str, Any]], by: Sequence[str] | None = None) -> list[Group]:
    """Group cells by the factors ``by`` (default: all of them), groups in campaign order."""
    names = available_factors(cells)
    if by:
        unknown = [b for b in by if b not in names]
        if unknown:
            raise AutorlError(
                f"--group-by {', '.join(unknown)}: not a factor of this campaign",
                hint=f"choose among {', '.join(names) or '(no cells)'}; seed and replicate "
                "vary within a group and cannot group",
            )
        names = [n for n in names if n in by]
    groups: dict[tuple[tuple[str, str], ...], Group] = {}
    for cell in cells:
        values = factors(cell)
        key = tuple((n, values.get(n, NO_VALUE)) for n in names)
        groups.setdefault(key, Group(key)).cells.append(cell)
    return list(groups.values())


def constant_factors(groups: Sequence[Group]) -> dict[str, str]:
    """Factors with one value across all groups (printed once, left out of short labels)."""
    if not groups:
        return {}
    common = dict(groups[0].key)
    for g in groups[1:]:
        common = {k: v for k, v in common.items() if g.factors.get(k) == v}
    return common if len(groups) > 1 else {}


def shorten(value: str, limit: int = 32) -> str:
    """``scripted//long/path/react_tiny.yaml`` -> ``scripted/react_tiny.yaml``: a label keeps
    what tells values apart, not the directories."""
    if len(value) <= limit or "/" not in value or value.startswith("{"):
        return value
    head, _, rest = value.partition("/")
    return f"{head}/{rest.rstrip('/').rsplit('/', 1)[-1]}"


def redundant_factors(groups: Sequence[Group], constant: Iterable[str]) -> dict[str, str]:
    """Varying factors that another, earlier one determines (a driver zipped with its agent,
    a task's options with the task): ``{factor: the factor it follows}``. Labels leave them
    out; the legend says which follows which."""
    skip = set(constant)
    names = [k for k, _ in groups[0].key if k not in skip] if groups else []
    found: dict[str, str] = {}
    for i, name in enumerate(names):
        for earlier in names[:i]:
            if earlier in found:
                continue
            seen: dict[str, str] = {}
            if all(
                seen.setdefault(g.factors[earlier], g.factors[name]) == g.factors[name]
                for g in groups
            ):
                found[name] = earlier
                break
    return found


def varying_factors(groups: Sequence[Group], constant: Iterable[str]) -> list[str]:
    """The factor names a short label lists, in order."""
    skip = set(constant)
    return [k for k, _ in groups[0].key if k not in skip] if groups else []


def pair_key(cell: dict[str, Any], grouping: Sequence[str]) -> tuple[str, ...]:
    """What must match for two cells of different groups to be a pair."""
    outside = [v for k, v in factors(cell).items() if k not in grouping and k not in PAIR_BY]
    return (*(_text(cell.get(k)) for k in PAIR_BY), *outside)


def pairs(
    a: Group, b: Group, grouping: Sequence[str]
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Cells of ``a`` and ``b`` matched on :func:`pair_key`, in ``a``'s order."""
    others = {pair_key(c, grouping): c for c in b.cells}
    return [(c, others[k]) for c in a.cells if (k := pair_key(c, grouping)) in others]


def select_groups(groups: Sequence[Group], selector: str) -> list[Group]:
    """The groups whose factors include every ``name=value`` of ``selector`` (comma-separated)."""
    wanted: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in selector.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise AutorlError(
                f"--baseline-group {selector!r}: {part!r} is not name=value",
                hint="write factors as name=value pairs, e.g. --baseline-group agent=scripted",
            )
        wanted[name.strip()] = value.strip()
    if not wanted:
        raise AutorlError(
            "--baseline-group is empty", hint="e.g. --baseline-group agent=scripted,driver=none"
        )
    known = {k for g in groups for k in g.factors}
    unknown = sorted(set(wanted) - known)
    if unknown:
        raise AutorlError(
            f"--baseline-group {selector!r}: {', '.join(unknown)} is not a grouping factor",
            hint=f"grouping factors: {', '.join(sorted(known)) or '(none)'}",
        )
    chosen = [g for g in groups if all(g.factors.get(k) == v for k, v in wanted.items())]
    if not chosen:
        listing = "\n    ".join(g.label for g in groups)
        raise AutorlError(
            f"--baseline-group {selector!r} matches no group",
            hint=f"the groups are:\n    {listing}",
        )
    return chosen
