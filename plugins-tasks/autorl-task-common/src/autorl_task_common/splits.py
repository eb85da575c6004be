"""A built split as the :class:`~autorl.types.PreparedTask` the harness takes.

Every task that writes a split with :func:`autorl_data.cache.write_split` (``train.jsonl``,
``eval.jsonl``, ``meta.json``) hands it over the same way: those files, and a description made
from the split's name and sizes and the evaluator's config. That wiring lives here once.

Grader side only: imports autorl and is not one of :data:`autorl_task_common.KIT_MODULES`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from autorl_data.cache import read_meta

from autorl.types import PreparedTask


def split_task(
    split_dir: Path,
    split: str,
    describe: Callable[..., str],
    evaluator_config: dict[str, Any],
    about: Mapping[str, Any] | None = None,
    **task: Any,
) -> PreparedTask:
    """The task on the split ``split`` built in ``split_dir``: its train and eval files, and
    ``describe(split=, n_train=, n_eval=, evaluator_config=, **about)`` (``about``: what else
    the task's description takes). ``task``: the rest of the :class:`PreparedTask`."""
    meta = read_meta(split_dir)
    return PreparedTask(
        train_files=(split_dir / "train.jsonl",),
        eval_path=split_dir / "eval.jsonl",
        description=describe(
            split=split,
            n_train=meta["n_train"],
            n_eval=meta["n_eval"],
            evaluator_config=evaluator_config,
            **(about or {}),
        ),
        evaluator_config=evaluator_config,
        split=split,
        **task,
    )
