"""Loader for the official WebShop data files (Yao et al., 2022), when the user has them.

``data_path`` must hold ``items_shuffle_1000.json`` (the 1,000-product catalogue),
``items_ins_v2_1000.json`` (product attributes) and ``items_human_ins.json`` (human
instructions). As in the reference: products become items (title = ``name``, features =
``small_description``, description = ``full_description``, options from
``customization_options``, a price range is resolved to one uniform draw), goals are the human
instructions with attributes, each given a price bound from the next multiples of ten above the
price, and the goals are shuffled with seed 233. Eval = the first ``eval_size`` goals (100: the
paper's held-out sessions, ids ``fixed_<i>``); train = the goals after the reference's first
1,500 (its test and dev ranges), less any goal whose target product is an eval target.
The random draws follow our own order, so ids and price bounds need not equal the reference's.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from autorl_task_webshop.catalog import DataError, Goal, Product

FILES = ("items_shuffle_1000.json", "items_ins_v2_1000.json", "items_human_ins.json")
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
SHUFFLE_SEED = 233
REFERENCE_HELD_OUT = 1500
"""Goals 0-499 are the reference's test range and 500-1499 its dev range; train starts here."""


def missing_files(data_path: Path) -> list[str]:
    return [name for name in FILES if not (data_path / name).is_file()]


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None


def _prices(pricing: Any) -> list[float]:
    if not pricing:
        return [100.0]
    if isinstance(pricing, list):
        return [float(p) for p in pricing[:2]] or [100.0]
    values = [re.sub(r"[^\d.]", "", part) for part in str(pricing).split("$")[1:]]
    return [float(v) for v in values if v][:2] or [100.0]


def load_products(data_path: Path, rng: random.Random) -> list[Product]:
    items = _read(data_path / FILES[0])
    attributes = _read(data_path / FILES[1])
    if not isinstance(items, list) or not isinstance(attributes, dict):
        raise DataError(
            f"{data_path}: {FILES[0]} must be a JSON list and {FILES[1]} a JSON object "
            "keyed by asin"
        )
    products: list[Product] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        asin = str(item.get("asin", ""))
        if not asin or asin == "nan" or len(asin) > 10 or asin in seen:
            continue
        if "name" not in item:
            raise DataError(f"{data_path / FILES[0]}: item #{index} ({asin}) has no 'name'")
        seen.add(asin)
        pricing = _prices(item.get("pricing"))
        price = pricing[0] if len(pricing) == 1 else rng.uniform(*pricing)
        options: dict[str, tuple[str, ...]] = {}
        for name, contents in (item.get("customization_options") or {}).items():
            if contents:
                options[name.lower()] = tuple(
                    str(c["value"]).strip().replace("/", " | ").lower() for c in contents
                )
        bullets = item.get("small_description") or []
        products.append(
            Product(
                asin=asin,
                title=str(item["name"]),
                price=round(float(price), 2),
                category=str(item.get("category", "")),
                product_category=str(item.get("product_category", "")),
                query=str(item.get("query", "")).lower().strip(),
                attributes=tuple(attributes.get(asin, {}).get("attributes", [])),
                options=options,
                features=tuple(bullets if isinstance(bullets, list) else [bullets]),
                description=str(item.get("full_description") or ""),
            )
        )
    return products


def load_goals(data_path: Path, products: list[Product], rng: random.Random) -> list[Goal]:
    human = _read(data_path / FILES[2])
    if not isinstance(human, dict):
        raise DataError(f"{data_path / FILES[2]}: expected a JSON object keyed by asin")
    goals: list[Goal] = []
    for product in products:
        for entry in human.get(product.asin, []):
            wanted = entry.get("instruction_attributes") or []
            if not wanted:
                continue
            above = [p for p in PRICE_RANGE if p > product.price][:4]
            if len(above) >= 2:
                upper = sorted(rng.sample(above, 2))[1]
                price_text = f", and price lower than {upper:.2f} dollars"
            else:
                upper, price_text = 1_000_000.0, ""
            options = entry.get("instruction_options") or []
            if isinstance(options, dict):
                options = list(options.values())
            goals.append(
                Goal(
                    session_id="",
                    instruction=str(entry["instruction"]).strip(".") + price_text,
                    asin=product.asin,
                    attributes=tuple(wanted),
                    options=tuple(str(o).lower() for o in options),
                    price_upper=upper,
                    query=product.query,
                    name=product.title,
                    product_category=product.product_category,
                    category=product.category,
                )
            )
    random.Random(SHUFFLE_SEED).shuffle(goals)
    return goals


def load_official(
    data_path: Path, eval_size: int = 100, seed: int = SHUFFLE_SEED
) -> tuple[list[Product], list[Goal], list[Goal], dict[str, Any]]:
    """``(products, train_goals, eval_goals, meta)`` from the official files in ``data_path``."""
    missing = missing_files(data_path)
    if missing:
        raise FileNotFoundError(
            f"WebShop data_path {data_path} lacks {', '.join(missing)}; download the reference "
            "data (items_shuffle_1000.json, items_ins_v2_1000.json, items_human_ins.json) there"
        )
    rng = random.Random(seed)
    products = load_products(data_path, rng)
    goals = load_goals(data_path, products, rng)
    if len(goals) <= eval_size:
        raise DataError(f"{data_path}: only {len(goals)} human goals, need more than {eval_size}")
    evals = [_with_id(g, f"fixed_{i}") for i, g in enumerate(goals[:eval_size])]
    start = REFERENCE_HELD_OUT if len(goals) > REFERENCE_HELD_OUT else eval_size
    eval_targets = {g.asin for g in evals}
    eval_texts = {g.instruction for g in evals}
    candidates = goals[start:]
    train = [
        _with_id(g, f"train_{i}")
        for i, g in enumerate(candidates)
        if g.asin not in eval_targets and g.instruction not in eval_texts
    ]
    meta = {
        "n_goals": len(goals),
        "train_start": start,
        "dropped_train_sharing_eval_target": len(candidates) - len(train),
    }
    return products, train, evals, meta


def _with_id(goal: Goal, session_id: str) -> Goal:
    from dataclasses import replace

    return replace(goal, session_id=session_id)
