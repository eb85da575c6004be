"""Documents and questions: the data model, and reading/writing it.

A :class:`Question` has one gold item (``answer_type == "single"``) or a list of items that a
correct answer must all contain (``"set"``). ``support`` names the documents that hold the facts
and ``searches`` the queries that find them (used by the scripted expert). Standard library only
(copied into the workspace kit).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ANSWER_TYPES = ("single", "set")


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    url: str = ""


@dataclass(frozen=True)
class Question:
    session_id: str
    question: str
    answer: tuple[str, ...]
    answer_type: str = "single"
    template: str = ""
    support: tuple[str, ...] = field(default=())
    searches: tuple[str, ...] = field(default=())
    answer_text: str = ""
    """The gold answer as the data set writes it (google/deepsearchqa's ``answer``; empty for
    the shipped questions): the reference's judge and string match read this text."""
    type_label: str = ""
    """The answer type as the data set writes it (``Single Answer``/``Set Answer``)."""

    def __post_init__(self) -> None:
        if self.answer_type not in ANSWER_TYPES:
            raise ValueError(
                f"question {self.session_id}: answer_type {self.answer_type!r} is not one of "
                f"{', '.join(ANSWER_TYPES)}"
            )
        if not self.answer or not all(str(a).strip() for a in self.answer):
            raise ValueError(f"question {self.session_id}: empty gold answer")

    @property
    def gold_text(self) -> str:
        """The gold answer as one line (items joined with ', ' for set answers)."""
        return ", ".join(self.answer)

    def to_dict(self) -> dict[str, Any]:
        row = asdict(self)
        row["answer"] = list(self.answer)
        row["support"] = list(self.support)
        row["searches"] = list(self.searches)
        return row

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Question:
        answer = row["answer"]
        return cls(
            session_id=str(row["session_id"]),
            question=str(row["question"]),
            answer=tuple(str(a) for a in (answer if isinstance(answer, list) else [answer])),
            answer_type=str(row.get("answer_type", "single")),
            template=str(row.get("template", "")),
            support=tuple(row.get("support") or ()),
            searches=tuple(row.get("searches") or ()),
            answer_text=str(row.get("answer_text", "")),
            type_label=str(row.get("type_label", "")),
        )


def _rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """A JSON list or JSON lines."""
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return list(json.loads(text))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_documents(path: str | os.PathLike[str]) -> list[Document]:
    return [Document(**row) for row in _rows(path)]


def load_questions(path: str | os.PathLike[str]) -> list[Question]:
    return [Question.from_dict(row) for row in _rows(path)]


def write_json(path: str | os.PathLike[str], rows: Iterable[Any]) -> None:
    payload = [asdict(r) if hasattr(r, "__dataclass_fields__") else r for r in rows]
    for row in payload:
        for key, value in list(row.items()):
            if isinstance(value, tuple):
                row[key] = list(value)
    Path(path).write_text(
        json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
