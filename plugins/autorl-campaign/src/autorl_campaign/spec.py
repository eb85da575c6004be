"""A campaign file: axes of run options expanded into cells, each a fully resolved run config.

The file is a run config (TOML or YAML: the values every cell shares) plus two tables::

    [campaign]                 # how the campaign runs
    name = "demo"
    replicates = 1             # runs per cell with the same config
    executor = "pool"          # local (serial), pool, ray, or any executor plugin
    executor_options = { workers = 2 }
    cpus_per_cell = 1          # the slots a cell holds while it runs
    gpus_per_cell = 0          # the agent's GPUs
    grader_gpus_per_cell = 0   # and the grader's, disjoint
    zip = [["agent", "driver"]]            # axes that vary together, not crossed
    exclude = [{ agent = "react", task = "humaneval" }]
    include = [{ agent = "react", task = "gsm8k", seed = 7 }]

    [axes]                     # a run option (dotted for nested ones) -> its values
    agent = ["react", "scripted"]
    task = ["gsm8k", "humaneval"]
    seed = [0, 1]
    "budget.wall_seconds" = [120, 300]

Cells are the product of the axes (zipped groups count as one axis), minus ``exclude``, plus
``include``, times ``replicates``. A cell's id is a hash of its resolved config and replicate
index, so the same file always names the same cells: re-running it, or resuming it, never
duplicates a cell, and an edit to one axis value makes new cells instead of mislabelling old
results.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autorl.config import RunConfig, read_config_file, validate_config
from autorl.errors import ConfigError
from autorl.executors import Slot

CAMPAIGN_KEYS = {
    "name": "the campaign's name (default: the file's stem); its directory is campaigns/<name>",
    "replicates": "runs per cell with the same config (default 1)",
    "executor": "local (default), pool, ray or another executor plugin",
    "executor_options": "the executor's options, e.g. { workers = 2 } or { address = 'auto' }",
    "cpus_per_cell": "CPU cores a cell holds while it runs (default: limits.cpus, else 1)",
    "gpus_per_cell": "GPUs a cell's agent holds (default: the number in limits.gpus, else 0)",
    "grader_gpus_per_cell": "GPUs a cell's grader holds, apart from the agent's (default: the "
    "number in grader.gpus, else 0)",
    "zip": "lists of axes that vary together, e.g. [['agent', 'driver']]",
    "exclude": "cells to leave out: tables of axis values, e.g. [{ agent = 'x', task = 'y' }]",
    "include": "extra cells: tables of option values laid over the shared config",
    "out": "the campaign directory (default campaigns/<name>)",
}
PER_RUN_KEYS = ("runs_dir", "run_id")
"""Set by the campaign for each cell: not options a file may give."""


@dataclass(frozen=True)
class Cell:
    """One run of the campaign: its id, where it came from, and everything it needs."""

    cell_id: str
    position: int
    replicate: int
    axes: dict[str, Any]
    config: dict[str, Any]
    """The resolved run config (JSON values), without runs_dir/run_id (the campaign's)."""
    slot: Slot = field(default_factory=Slot)
    """What the cell holds: its GPUs are the agent's, then ``grader_gpus`` for its grader."""
    grader_gpus: int = 0

    @property
    def label(self) -> str:
        shown = ", ".join(f"{k}={_short(v)}" for k, v in self.axes.items())
        rep = f", replicate {self.replicate}" if self.replicate else ""
        return f"({shown}{rep})" if shown or rep else "(the shared config)"

    def store_row(self) -> dict[str, Any]:
        return {
            "cell_id": self.cell_id,
            "position": self.position,
            "replicate": self.replicate,
            "axes": self.axes,
            "config": self.config,
        }


@dataclass(frozen=True)
class Campaign:
    name: str
    path: Path
    out_dir: Path
    cells: tuple[Cell, ...]
    executor: str
    executor_options: dict[str, Any]
    axes: tuple[str, ...]
    notes: tuple[str, ...] = ()
    source_hash: str = ""


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 40 else text[:37] + "..."


def _set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """``data["a"]["b"] = value`` for ``path == "a.b"``, creating tables on the way."""
    *parents, last = path.split(".")
    node = data
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[last] = copy.deepcopy(value)


def _get_path(data: Mapping[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _overlaps(a: str, b: str) -> bool:
    """``budget`` and ``budget.wall_seconds`` set the same option; ``seed`` and ``seeds`` don't."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _fields_hint() -> str:
    return ", ".join(sorted(RunConfig.model_fields))


def _check_axis_name(name: str, where: str) -> None:
    top = name.split(".", 1)[0]
    if top in PER_RUN_KEYS:
        raise ConfigError(
            f"{where}: {name!r} cannot be an axis: the campaign sets it for each cell",
            hint="remove it; runs go to <campaign dir>/runs/<cell id>-<attempt>",
        )
    if top not in RunConfig.model_fields:
        close = difflib.get_close_matches(top, list(RunConfig.model_fields), n=1)
        raise ConfigError(
            f"{where}: {name!r} is not a run option"
            + (f" (did you mean {close[0]!r}?)" if close else ""),
            hint=f"axes are run options (dotted for nested ones): {_fields_hint()}",
        )


def _campaign_table(data: dict[str, Any], path: Path) -> dict[str, Any]:
    table = data.pop("campaign", None) or {}
    if not isinstance(table, dict):
        raise ConfigError(f"campaign file {path}: [campaign] must be a table")
    for key in table:
        if key not in CAMPAIGN_KEYS:
            close = difflib.get_close_matches(key, list(CAMPAIGN_KEYS), n=1)
            raise ConfigError(
                f"campaign file {path}: [campaign] has an unknown key {key!r}"
                + (f" (did you mean {close[0]!r}?)" if close else ""),
                hint="keys: " + "; ".join(f"{k}: {v}" for k, v in CAMPAIGN_KEYS.items()),
            )
    return table


def _misplaced(raw: Mapping[str, Any]) -> list[str]:
    """Campaign keys written among the shared run options (they are not run options)."""
    return [k for k in raw if k in CAMPAIGN_KEYS and k not in RunConfig.model_fields]


def _misplaced_error(
    path: Path, raw: dict[str, Any], keys: list[str], overrides: Any, out_dir: Any
) -> ConfigError:
    """Name where each misplaced key belongs, and what else is wrong once it is there (a typo
    inside it included: the file is loaded and checked as if moved), so one edit fixes all."""
    moved = copy.deepcopy(raw)
    table = moved.get("campaign")
    table = dict(table) if isinstance(table, dict) else {}
    for key in keys:
        table.setdefault(key, moved.pop(key))
    moved["campaign"] = table
    lines = [
        f"- {key!r} is a campaign key, written at the top level: it belongs under `campaign:` "
        f"(YAML) or [campaign] (TOML): {CAMPAIGN_KEYS[key]}"
        for key in keys
    ]
    try:
        from autorl_campaign.validate import check_campaign

        campaign = _expand(path, moved, "", overrides, out_dir)
        inside = [message for _, (message, _) in check_campaign(campaign)]
    except ConfigError as exc:
        inside = [exc.message.removeprefix(f"campaign file {path}: ")]
    lines += [f"- and once it is there: {m}" for m in dict.fromkeys(inside)]
    return ConfigError(
        f"campaign file {path}:\n" + "\n".join(lines),
        hint=f"move {', '.join(keys)} under campaign: (indented), as in the example of "
        "docs/campaigns.md",
    )


RULES = ("include", "exclude")


def _check_rules(key: str, rules: list[dict[str, Any]], axes: Mapping[str, Any]) -> None:
    """``exclude`` names axes; ``include`` names run options (so a typo is caught here)."""
    for rule in rules:
        for name in rule:
            if key == "exclude" and name not in axes:
                raise ConfigError(
                    f"exclude names {name!r}, which is not an axis",
                    hint=f"axes: {', '.join(axes) or 'none'}",
                )
            if key == "include":
                _check_axis_name(name, "include")


def _axes_table(data: dict[str, Any], path: Path) -> dict[str, list[Any]]:
    if "matrix" in data and "axes" not in data:
        data["axes"] = data.pop("matrix")  # the name `autorl run` used to take
    axes = data.pop("axes", None) or {}
    if not isinstance(axes, dict):
        raise ConfigError(f"campaign file {path}: [axes] must be a table of lists")
    for name, values in axes.items():
        _check_axis_name(name, f"campaign file {path}: [axes]")
        if not isinstance(values, list) or not values:
            raise ConfigError(
                f"campaign file {path}: axis {name!r} must be a non-empty list of values",
                hint=f"e.g. {name} = [...]; a single value belongs in the shared config",
            )
    names = list(axes)
    for a, b in itertools.combinations(names, 2):
        if _overlaps(a, b):
            raise ConfigError(f"campaign file {path}: axes {a!r} and {b!r} set the same option")
    return axes


def _groups(axes: dict[str, list[Any]], zips: Any, path: Path) -> list[list[str]]:
    """Axis names grouped: each zip group varies together, every other axis alone."""
    if zips is None:
        zips = []
    if not isinstance(zips, list) or not all(isinstance(z, list) and z for z in zips):
        raise ConfigError(
            f"campaign file {path}: [campaign] zip must be a list of lists of axis names",
            hint='e.g. zip = [["agent", "driver"]]',
        )
    seen: set[str] = set()
    for group in zips:
        for name in group:
            if name not in axes:
                raise ConfigError(
                    f"campaign file {path}: zip names {name!r}, which is not an axis",
                    hint=f"axes: {', '.join(axes) or 'none'}",
                )
            if name in seen:
                raise ConfigError(f"campaign file {path}: axis {name!r} is in two zip groups")
            seen.add(name)
        lengths = {name: len(axes[name]) for name in group}
        if len(set(lengths.values())) > 1:
            raise ConfigError(
                f"campaign file {path}: zipped axes need the same number of values, got "
                + ", ".join(f"{k}: {v}" for k, v in lengths.items())
            )
    groups: list[list[str]] = []
    for name in axes:
        group = next((list(z) for z in zips if name in z), [name])
        if group not in groups:
            groups.append(group)
    return groups


def _matches(axes: Mapping[str, Any], rule: Mapping[str, Any]) -> bool:
    return all(axes.get(k) == v for k, v in rule.items())


def _rules(table: Mapping[str, Any], key: str, path: Path) -> list[dict[str, Any]]:
    rules = table.get(key) or []
    if not isinstance(rules, list) or not all(isinstance(r, dict) and r for r in rules):
        raise ConfigError(
            f"campaign file {path}: [campaign] {key} must be a list of non-empty tables",
            hint=f'e.g. {key} = [{{ agent = "react", task = "gsm8k" }}]',
        )
    return rules


def _positive_int(table: Mapping[str, Any], key: str, default: int, path: Path) -> int:
    value = table.get(key, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < 0
        or (key == "replicates" and value < 1)
    ):
        raise ConfigError(
            f"campaign file {path}: [campaign] {key} must be a whole number"
            + (" >= 1" if key == "replicates" else " >= 0")
            + f", got {value!r}"
        )
    return value


def cell_id(config: Mapping[str, Any], replicate: int) -> str:
    blob = json.dumps({"config": config, "replicate": replicate}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def load_campaign(
    path: Path, overrides: Mapping[str, Any] | None = None, out_dir: Path | None = None
) -> Campaign:
    """Parse and expand a campaign file; every cell's run config is validated here.

    ``overrides`` are dotted option paths (``budget.max_submissions``) set in every cell; one
    that sets an axis is an error (the cells would silently collapse into one).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"campaign file not found: {path}" + (" (it is a directory)" if path.is_dir() else ""),
            hint="check the FILE given to `autorl campaign run` (a .yaml or .toml campaign file, "
            "see docs/campaigns.md); `autorl campaign status DIR` takes a campaign directory",
        )
    raw = read_config_file(path)
    source_hash = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    misplaced = _misplaced(raw)
    if misplaced:
        raise _misplaced_error(path, raw, misplaced, overrides, out_dir)
    return _expand(path, raw, source_hash, overrides, out_dir)


def _expand(
    path: Path,
    raw: dict[str, Any],
    source_hash: str,
    overrides: Mapping[str, Any] | None,
    out_dir: Path | None,
) -> Campaign:
    """The campaign of a file's parsed contents (see :func:`load_campaign`)."""
    data = copy.deepcopy(raw)
    table = _campaign_table(data, path)
    axes = _axes_table(data, path)
    for key in data:
        if key not in RunConfig.model_fields:
            close = difflib.get_close_matches(key, [*RunConfig.model_fields, "campaign", "axes"])
            raise ConfigError(
                f"campaign file {path}: unknown top-level key {key!r}"
                + (f" (did you mean {close[0]!r}?)" if close else ""),
                hint="a campaign file holds the shared run options, `campaign:` and `axes:`; "
                f"run options: {_fields_hint()}",
            )
    for key in PER_RUN_KEYS:
        if key in data:
            raise ConfigError(
                f"campaign file {path}: {key!r} is set per cell by the campaign",
                hint="remove it; cells run under <campaign dir>/runs",
            )
    for key in overrides or {}:
        clash = next((a for a in axes if _overlaps(a, key)), None)
        if clash is not None:
            raise ConfigError(
                f"the option {key!r} given on the command line overrides the axis {clash!r} "
                f"of {path}: every cell would get the same value and their results would be "
                "mislabelled",
                hint=f"drop the flag, or remove the axis {clash!r} from the file",
            )
    base = data
    for key, value in (overrides or {}).items():
        _set_path(base, key, value)
    name = str(table.get("name") or path.stem)
    replicates = _positive_int(table, "replicates", 1, path)
    groups = _groups(axes, table.get("zip"), path)
    exclude = _rules(table, "exclude", path)
    include = _rules(table, "include", path)
    for key, rules in (("exclude", exclude), ("include", include)):
        try:
            _check_rules(key, rules, axes)
        except ConfigError as exc:
            raise ConfigError(f"campaign file {path}: {exc.message}", hint=exc.hint) from None

    combos: list[dict[str, Any]] = []
    for picks in itertools.product(*[range(len(axes[g[0]])) for g in groups]):
        combo: dict[str, Any] = {}
        for group, i in zip(groups, picks, strict=True):
            for axis in group:
                combo[axis] = axes[axis][i]
        if not any(_matches(combo, rule) for rule in exclude):
            combos.append(combo)
    combos += [dict(rule) for rule in include]
    if not combos:
        raise ConfigError(
            f"campaign file {path}: no cells left",
            hint="every combination is excluded; loosen [campaign] exclude",
        )

    cells: list[Cell] = []
    seen: dict[str, int] = {}
    notes: list[str] = []
    total = len(combos)
    for position, combo in enumerate(combos):
        merged = copy.deepcopy(base)
        for key, value in combo.items():
            _set_path(merged, key, value)
        where = f"campaign file {path}, cell {position + 1} of {total} ({_describe(combo)})"
        config = validate_config(merged, None, where=where)
        resolved = config.model_dump(mode="json", exclude=set(PER_RUN_KEYS))
        resolved["labels"] = {**resolved.get("labels", {}), "campaign": name}
        slot, grader_gpus = _slot(table, config, path)
        for replicate in range(replicates):
            cid = cell_id(resolved, replicate)
            if cid in seen:
                notes.append(
                    f"cell {position + 1} ({_describe(combo)}) is the same run as cell "
                    f"{seen[cid] + 1}: kept once"
                )
                continue
            seen[cid] = position
            config_with_cell = {**resolved, "labels": {**resolved["labels"], "cell": cid}}
            cells.append(Cell(cid, position, replicate, combo, config_with_cell, slot, grader_gpus))
    executor = str(table.get("executor") or "local")
    options = table.get("executor_options") or {}
    if not isinstance(options, dict):
        raise ConfigError(f"campaign file {path}: [campaign] executor_options must be a table")
    out = out_dir or Path(str(table.get("out") or Path("campaigns") / name))
    return Campaign(
        name=name,
        path=path,
        out_dir=out,
        cells=tuple(cells),
        executor=executor,
        executor_options=dict(options),
        axes=tuple(axes),
        notes=tuple(notes),
        source_hash=source_hash,
    )


def _describe(combo: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_short(v)}" for k, v in combo.items()) or "the shared config"


def _slot(table: Mapping[str, Any], config: RunConfig, path: Path) -> tuple[Slot, int]:
    cpus = table.get("cpus_per_cell", config.limits.cpus or 1)
    if isinstance(cpus, bool) or not isinstance(cpus, int | float) or cpus <= 0:
        raise ConfigError(
            f"campaign file {path}: [campaign] cpus_per_cell must be a number > 0, got {cpus!r}"
        )
    gpus = _positive_int(table, "gpus_per_cell", len(config.limits.gpus), path)
    grader = _positive_int(table, "grader_gpus_per_cell", len(config.grader.gpus), path)
    if gpus and not grader and config.device != "cpu":
        raise ConfigError(
            f"campaign file {path}: each cell's agent holds {gpus} GPU(s) and its grader none, "
            "so evaluations would run on the agent's GPUs",
            hint="set [campaign] grader_gpus_per_cell = 1, or device = 'cpu' to evaluate on CPUs",
        )
    return Slot(cpus=float(cpus), gpus=gpus + grader), grader


def axis_value(cell: Cell, axis: str) -> Any:
    """The cell's value of an axis (or of any option path, from its resolved config)."""
    return cell.axes[axis] if axis in cell.axes else _get_path(cell.config, axis)
