"""The two sources of AlpacaEval examples, as plain dicts.

- offline: the split shipped in ``data/`` (written for this project by
  ``scripts/make_offline_split.py``; instructions with reference answers).
- local: a copy of the real data in one directory (task option ``data_path``):
  ``alpaca_eval_gpt4_baseline.json`` (the 805 AlpacaEval 2.0 prompts with the gpt4_turbo
  reference outputs, from the hub data set ``tatsu-lab/alpaca_eval``) and the Alpaca train data
  (``alpaca_data.json`` of tatsu-lab/stanford_alpaca, or the hub's ``tatsu-lab/alpaca`` parquet);
  optionally ``instruction_difficulty.csv`` and ``df_gamed.csv`` from the same hub data set, which
  AlpacaEval's length-controlled GLM uses.

Train rows: ``{"id", "instruction", "input", "output"}``. Eval rows: ``{"id", "index",
"instruction", "reference", "reference_generator", "dataset"}`` (``index`` is the position in
the eval set, which the GLM's per-instruction difficulty is keyed by).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError

DATA_DIR = Path(__file__).resolve().parent / "data"
OFFLINE_TRAIN = DATA_DIR / "offline_train.jsonl"
OFFLINE_EVAL = DATA_DIR / "offline_eval.jsonl"

EVAL_FILES = ("alpaca_eval_gpt4_baseline.json", "alpaca_eval_gpt4_baseline.jsonl")
TRAIN_FILES = ("alpaca_data.json", "alpaca_data.jsonl", "alpaca_data_cleaned.json")
GLM_FILES = ("instruction_difficulty.csv", "df_gamed.csv")
REFERENCE_TRAIN_SIZE = 2000
"""The reference protocol trains on the first 2,000 tatsu-lab/alpaca instructions."""

LAYOUT_HINT = (
    "put alpaca_eval_gpt4_baseline.json (hub data set tatsu-lab/alpaca_eval) and alpaca_data.json "
    "(tatsu-lab/stanford_alpaca; or the hub's tatsu-lab/alpaca train-*.parquet) in one directory; "
    "add instruction_difficulty.csv and df_gamed.csv from tatsu-lab/alpaca_eval for AlpacaEval "
    "2.0's exact length-controlled GLM"
)


def normalize(text: str) -> str:
    """The key under which two instructions are duplicates: case and whitespace ignored."""
    return " ".join(str(text).lower().split())


def _read_json_rows(path: Path) -> list[dict[str, Any]]:
    """A JSON list of objects (``.json``) or JSON lines (``.jsonl``), with precise errors."""
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})", hint=LAYOUT_HINT
        ) from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ConfigError(f"{path}: expected a list of JSON objects", hint=LAYOUT_HINT)
    return rows


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(
            f"{path}: reading parquet files needs pyarrow",
            hint="pip install 'autorl-task-alpacaeval[reference]', or use alpaca_data.json",
        ) from None
    return pq.read_table(path).to_pylist()


def _need(row: dict[str, Any], fields: Iterable[str], where: str) -> None:
    missing = [f for f in fields if not isinstance(row.get(f), str)]
    if missing:
        raise ConfigError(
            f"{where}: missing string field(s) {', '.join(map(repr, missing))} (has {sorted(row)})",
            hint=LAYOUT_HINT,
        )


def _checked(rows: list[dict[str, Any]], source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(index, row)``, each row holding string ``instruction`` and ``output``."""
    for i, row in enumerate(rows):
        _need(row, ("instruction", "output"), f"{source} row {i + 1}")
        yield i, row


def eval_rows(rows: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """AlpacaEval rows (``instruction``, ``output``, ``generator``, ``dataset``) as eval rows."""
    return [
        {
            "id": str(row.get("id") or f"eval-{i:04d}"),
            "index": i,
            "instruction": row["instruction"],
            "reference": row["output"],
            "reference_generator": str(row.get("generator") or "reference"),
            "dataset": str(row.get("dataset") or ""),
        }
        for i, row in _checked(rows, source)
    ]


def train_rows(rows: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """Alpaca rows (``instruction``, optional ``input``, ``output``) as train rows."""
    return [
        {
            "id": str(row.get("id") or f"train-{i:05d}"),
            "instruction": row["instruction"],
            "input": str(row.get("input") or ""),
            "output": row["output"],
        }
        for i, row in _checked(rows, source)
    ]


def offline() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, eval) of the shipped offline split."""
    train = [json.loads(x) for x in OFFLINE_TRAIN.read_text(encoding="utf-8").splitlines() if x]
    evals = [json.loads(x) for x in OFFLINE_EVAL.read_text(encoding="utf-8").splitlines() if x]
    return train_rows(train, OFFLINE_TRAIN.name), eval_rows(evals, OFFLINE_EVAL.name)


def reference_files(data_path: str | Path) -> dict[str, Path | None]:
    """The eval file, the train file and the optional GLM files of a local copy."""
    root = Path(data_path).expanduser()
    if not root.is_dir():
        raise ConfigError(
            f"task option data_path={str(data_path)!r}: not a directory", hint=LAYOUT_HINT
        )
    eval_file = next((root / n for n in EVAL_FILES if (root / n).is_file()), None)
    train_file = next((root / n for n in TRAIN_FILES if (root / n).is_file()), None)
    if train_file is None:
        train_file = next(iter(sorted(root.rglob("train-*.parquet"))), None)
    missing = [
        what
        for what, found in (
            ("the eval set (alpaca_eval_gpt4_baseline.json)", eval_file),
            ("the Alpaca train data (alpaca_data.json or train-*.parquet)", train_file),
        )
        if found is None
    ]
    if missing:
        raise ConfigError(
            f"task option data_path={str(root)!r}: no {' and no '.join(missing)}",
            hint=LAYOUT_HINT,
        )
    has_glm = all((root / n).is_file() for n in GLM_FILES)
    return {"eval": eval_file, "train": train_file, "glm_dir": root if has_glm else None}


def local(
    files: dict[str, Path | None], train_size: int | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(train, eval, dropped): the first ``train_size`` Alpaca rows (default 2,000) whose
    instruction is not an eval instruction, and the whole eval set."""
    eval_file, train_file = files["eval"], files["train"]
    assert eval_file is not None and train_file is not None
    evals = eval_rows(_read_json_rows(eval_file), eval_file.name)
    raw = (
        _read_parquet(train_file)
        if train_file.suffix == ".parquet"
        else _read_json_rows(train_file)
    )
    raw = raw[: train_size or REFERENCE_TRAIN_SIZE]
    taken = {normalize(e["instruction"]) for e in evals}
    kept = [r for r in raw if normalize(str(r.get("instruction", ""))) not in taken]
    return train_rows(kept, train_file.name), evals, len(raw) - len(kept)
