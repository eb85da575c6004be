"""Products and goals: the data model of the shop, loaded from plain JSON.

Standard library only (copied into the workspace kit). The field names follow the reference
WebShop where they matter to the reward (``query``, ``product_category``, ``attributes``,
``price_upper``, goal options).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SEP = "\u203a"
"""The breadcrumb separator of ``product_category`` (the reference's right angle quote)."""


class DataError(ValueError):
    """A catalogue or goal file that does not have the expected shape."""


@dataclass(frozen=True)
class Product:
    """One item of the catalogue, as the item page shows it."""

    asin: str
    title: str
    price: float
    category: str
    """Coarse category (``shoes``, ``beauty``...)."""
    product_category: str
    """Breadcrumb ``A SEP B SEP C``; two shared levels count as a category match in the reward."""
    query: str
    """The product type this item was listed under (``running shoes``)."""
    attributes: tuple[str, ...] = ()
    options: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Option groups (``size``, ``color``...) and their values, lower case."""
    features: tuple[str, ...] = ()
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["attributes"] = list(self.attributes)
        data["features"] = list(self.features)
        data["options"] = {k: list(v) for k, v in self.options.items()}
        return data


@dataclass(frozen=True)
class Goal:
    """One shopping session: the instruction and what the reward compares the purchase with."""

    session_id: str
    instruction: str
    asin: str
    """The product the instruction was written from (any product that matches scores too)."""
    attributes: tuple[str, ...]
    options: tuple[str, ...]
    """Wanted option values (``9``, ``blue``); the reward matches purchased options against them."""
    price_upper: float
    query: str
    name: str
    """Title of the target product (its content words give the type match)."""
    product_category: str
    category: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["attributes"] = list(self.attributes)
        data["options"] = list(self.options)
        return data


def _require(row: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in row:
        raise DataError(f"{where}: missing field {key!r} (fields present: {sorted(row)})")
    value = row[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DataError(f"{where}: field {key!r} has type {type(value).__name__}, expected {kind}")
    return value


def product_from_dict(row: Mapping[str, Any], where: str = "product") -> Product:
    """A :class:`Product` from its JSON form; a bad row raises :class:`DataError` saying where."""
    if not isinstance(row, Mapping):
        raise DataError(f"{where}: expected an object, got {type(row).__name__}")
    options = _require(row, "options", dict, where)
    return Product(
        asin=_require(row, "asin", str, where),
        title=_require(row, "title", str, where),
        price=float(_require(row, "price", (int, float), where)),
        category=str(row.get("category", "")),
        product_category=str(row.get("product_category", "")),
        query=str(row.get("query", "")),
        attributes=tuple(str(a) for a in row.get("attributes", ())),
        options={str(k).lower(): tuple(str(v).lower() for v in vs) for k, vs in options.items()},
        features=tuple(str(f) for f in row.get("features", ())),
        description=str(row.get("description", "")),
    )


def goal_from_dict(row: Mapping[str, Any], where: str = "goal") -> Goal:
    """A :class:`Goal` from its JSON form; a bad row raises :class:`DataError` saying where."""
    if not isinstance(row, Mapping):
        raise DataError(f"{where}: expected an object, got {type(row).__name__}")
    options = row.get("options", ())
    if isinstance(options, Mapping):
        options = list(options.values())
    return Goal(
        session_id=_require(row, "session_id", str, where),
        instruction=_require(row, "instruction", str, where),
        asin=_require(row, "asin", str, where),
        attributes=tuple(str(a) for a in _require(row, "attributes", list, where)),
        options=tuple(str(o).lower() for o in options),
        price_upper=float(_require(row, "price_upper", (int, float), where)),
        query=str(row.get("query", "")),
        name=str(row.get("name", "")),
        product_category=str(row.get("product_category", "")),
        category=str(row.get("category", "")),
    )


def load_products(path: str | os.PathLike[str]) -> list[Product]:
    """Products of a catalogue JSON file (a list of product objects)."""
    rows = _load_json(path)
    if not isinstance(rows, list):
        raise DataError(f"{path}: expected a JSON list of products, got {type(rows).__name__}")
    return [product_from_dict(row, f"{path}: product #{i}") for i, row in enumerate(rows)]


def load_goals(path: str | os.PathLike[str]) -> list[Goal]:
    """Goals of a JSON list file or a JSON-lines file (one goal object per line)."""
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        rows = _load_json(path)
        return [goal_from_dict(row, f"{path}: goal #{i}") for i, row in enumerate(rows)]
    goals = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            goals.append(goal_from_dict(row, f"{path}:{number}"))
    return goals


def _load_json(path: str | os.PathLike[str]) -> Any:
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None


def dump_json(path: str | os.PathLike[str], rows: Iterable[Product | Goal]) -> None:
    """Write products or goals as a compact JSON list (one object per line, diff-friendly)."""
    lines = [json.dumps(row.to_dict(), ensure_ascii=False, separators=(",", ":")) for row in rows]
    Path(path).write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")
