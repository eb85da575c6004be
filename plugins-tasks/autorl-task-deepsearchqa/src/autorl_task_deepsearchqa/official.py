"""The real data set: ``google/deepsearchqa`` (900 questions) from a local copy, split as the
reference protocol says (fixed seed 42: 100 train / 200 eval / the rest unused).

Hub layout: one CSV (``DSQA-full.csv``) with the columns ``problem``, ``problem_category``,
``answer`` and ``answer_type`` (``Single Answer`` / ``Set Answer``; a set answer lists its
items separated by commas or new lines). The loader also reads the same columns from JSON lines
or a JSON list, and accepts ``question`` for ``problem``. Nothing is downloaded: ``data_path``
is the file or the folder holding it.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl_task_deepsearchqa.corpus import Question

SPLIT_SEED = 42
REFERENCE_TRAIN = 100
REFERENCE_EVAL = 200
FILE_NAMES = ("DSQA-full.csv", "deepsearchqa.csv", "deepsearchqa.jsonl", "deepsearchqa.json")
_ITEM_SPLIT_RE = re.compile(r"\s*(?:\n|;|,)\s*")


def find_file(data_path: Path) -> Path:
    if data_path.is_file():
        return data_path
    for name in FILE_NAMES:
        if (data_path / name).is_file():
            return data_path / name
    csvs = sorted(data_path.glob("*.csv"))
    if len(csvs) == 1:
        return csvs[0]
    raise ConfigError(
        f"deepsearchqa: data_path {data_path} holds no DeepSearchQA file",
        hint=f"point data_path at the hub file or its folder ({', '.join(FILE_NAMES)})",
    )


def _rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as fh:
            return list(csv.DictReader(fh))
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return list(json.loads(text))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _items(answer: Any, answer_type: str) -> tuple[tuple[str, ...], str]:
    kind = "set" if "set" in answer_type.lower() else "single"
    if isinstance(answer, list):
        items = [str(a).strip() for a in answer]
    elif kind == "set":
        text = str(answer).strip()
        try:
            parsed = json.loads(text)
            items = [str(a).strip() for a in parsed] if isinstance(parsed, list) else [text]
        except json.JSONDecodeError:
            items = _ITEM_SPLIT_RE.split(text)
    else:
        items = [str(answer).strip()]
    items = [i for i in items if i]
    return tuple(items), kind


def _text(answer: Any, items: tuple[str, ...]) -> str:
    """The answer as the reference's judge sees it: the data set's text (a list: its items)."""
    return ", ".join(items) if isinstance(answer, list) else str(answer)


def load_questions(path: Path) -> list[Question]:
    """Every row as a :class:`Question` (session id ``dsqa-<row>``), in file order."""
    questions = []
    for n, row in enumerate(_rows(path)):
        text = row.get("problem") or row.get("question") or row.get("prompt")
        if not str(text or "").strip() or row.get("answer") in (None, ""):
            raise ConfigError(
                f"deepsearchqa: {path} row {n + 1} lacks 'problem' or 'answer'",
                hint="expected the hub columns problem, problem_category, answer, answer_type",
            )
        label = str(row.get("answer_type") or "Single Answer")
        answer, kind = _items(row["answer"], label)
        if not answer:
            raise ConfigError(f"deepsearchqa: {path} row {n + 1} has an empty answer")
        questions.append(
            Question(
                session_id=f"dsqa-{n:04d}",
                question=str(text),  # as written: the reference's prompt shows it so
                answer=answer,
                answer_type=kind,
                template=str(row.get("problem_category") or ""),
                answer_text=_text(row["answer"], answer),
                type_label=label,
            )
        )
    return questions


def reference_split(
    questions: list[Question], n_train: int = REFERENCE_TRAIN, n_eval: int = REFERENCE_EVAL
) -> tuple[list[Question], list[Question]]:
    """Shuffle as the reference does (``datasets.Dataset.shuffle(seed=42)``, which is numpy's
    ``default_rng(42).permutation``): the first ``n_train`` rows train, the next ``n_eval`` eval,
    in shuffled order."""
    if n_train + n_eval > len(questions):
        raise ConfigError(
            f"deepsearchqa: the file holds {len(questions)} questions, fewer than train_size "
            f"{n_train} + eval_size {n_eval}",
            hint="lower train_size/eval_size (the reference uses 100 + 200 of 900)",
        )
    import numpy as np

    order = np.random.default_rng(SPLIT_SEED).permutation(len(questions)).tolist()
    train = [questions[i] for i in order[:n_train]]
    evals = [questions[i] for i in order[n_train : n_train + n_eval]]
    return train, evals
