"""The ``gsm8k`` task: prepares the splits into the task cache, the kit and the description."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from autorl_data.cache import (
    build_once,
    files_digest,
    params_digest,
    read_meta,
    write_split,
)
from autorl_task_common.kits import module_kit
from autorl_task_common.splits import split_task
from pydantic import Field, StrictInt, model_validator

from autorl.options import OptionsModel, PositiveInt
from autorl.options import describe as describe_options
from autorl.options import parse_options as validate
from autorl.types import PreparedTask, TaskContext
from autorl_task_gsm8k import data
from autorl_task_gsm8k.description import describe

KIT_SOURCE = Path(__file__).with_name("kit.py")
CONTRACT = "autorl_task_gsm8k.kit"
"""The 'answer' contract the exact evaluator uses (prompt, extraction, normal form): loaded
from the installed package by the engine, never from the workspace copy of the kit."""
REFERENCE_CONTRACT = "autorl_task_gsm8k.kit:REFERENCE"
"""On real GSM8K: the reference's prompt and extraction (OpenCompass ``gsm8k_gen``); its four
worked examples come with the evaluator config (``few_shot``)."""
REFERENCE_PROTOCOL_VERSION = 2
"""Bump when what a reference split holds changes (2: the worked examples in meta.json)."""

OFFLINE_SPLIT = "offline-gsm-symbolic"
REFERENCE_SPLIT = "gsm8k-reference"
GENERATOR_VERSION = 1
"""Bump when the offline generation changes, so cached splits are rebuilt."""

EVALUATOR_CONFIG: dict[str, Any] = {
    "max_new_tokens": 192,
    "batch_size": 16,
    "temperature": 0.0,
}
"""Greedy decoding; 192 new tokens covers ~99 % of gsm_symbolic solutions (max ~220 tokens)."""
REFERENCE_EVALUATOR_CONFIG: dict[str, Any] = {"max_new_tokens": 512}
"""On real GSM8K, the reference's limit (OpenCompass ``gsm8k_gen``: ``max_out_len=512``)."""


class Options(OptionsModel):
    """``[task_options]`` of gsm8k."""

    train_size: PositiveInt | None = Field(
        None, description="train examples (offline default 1000; reference: all 7,473)"
    )
    eval_size: PositiveInt | None = Field(
        None, description="eval examples (offline default 50; reference: all 1,319)"
    )
    source: Literal["offline", "local", "hub"] | None = Field(
        None, description="offline (default), local (needs data_path) or hub (online)"
    )
    data_path: Path | None = Field(
        None, description="directory with the real GSM8K: train.jsonl/test.jsonl or parquet"
    )
    split_seed: StrictInt = Field(1234, description="seed of the offline generation")

    @model_validator(mode="after")
    def _local_needs_data(self) -> Options:
        if self.source == "local" and self.data_path is None:
            raise ValueError("source='local' needs data_path (a directory with the real GSM8K)")
        return self


OPTIONS = describe_options(Options)


@dataclass(frozen=True)
class Settings:
    source: str
    train_size: int | None
    eval_size: int | None
    data_path: Path | None
    split_seed: int


def parse_options(options: Mapping[str, Any]) -> Settings:
    """Validate ``[task_options]``: unknown keys and bad values are errors, not silent defaults."""
    opts = validate(Options, options, who="task 'gsm8k'")
    source = opts.source or ("local" if opts.data_path else "offline")
    return Settings(
        source=source,
        train_size=opts.train_size,
        eval_size=opts.eval_size,
        data_path=opts.data_path.expanduser().resolve() if opts.data_path else None,
        split_seed=opts.split_seed,
    )


def trim(rows: list[data.Example], size: int | None) -> list[data.Example]:
    return rows if size is None else rows[:size]


class GSM8KTask:
    """Grade-school math word problems; exact match of the final number (L1, rule-based)."""

    Options = Options
    """Its options model: a campaign checks them before any run starts."""

    name = "gsm8k"
    version = "1"

    def download(self, dest: Path) -> Path:
        """GSM8K as the reference reads it (``openai/gsm8k``, config ``main``): the hub's parquet
        files under ``dest/main/``; then ``data_path = dest``."""
        from autorl_data.fetch import hub_dataset

        return hub_dataset("openai/gsm8k", dest, ["main/*.parquet"], who="gsm8k")

    def prepare(self, ctx: TaskContext) -> PreparedTask:
        settings = parse_options(ctx.options)
        cache = Path(ctx.cache_dir)
        if settings.source == "offline":
            split_dir, split_name = self._offline(cache, settings)
        else:
            split_dir, split_name = self._reference(cache, settings)
        meta = read_meta(split_dir)
        config = dict(EVALUATOR_CONFIG)
        contract, kit_config = CONTRACT, None
        if settings.source != "offline":
            config |= REFERENCE_EVALUATOR_CONFIG | {"few_shot": meta["few_shot"]}
            contract = REFERENCE_CONTRACT
            kit_config = {"protocol": "reference", "few_shot": meta["few_shot"]}
        return split_task(
            split_dir,
            split_name,
            describe,
            config,
            {"few_shot_source": meta.get("few_shot_source")},
            evaluator="exact",
            contract=contract,
            kit_dir=self._kit(cache, kit_config),
            metric="accuracy",
        )

    def _offline(self, cache: Path, settings: Settings) -> tuple[Path, str]:
        params = {
            "generator": "reasoning_gym/gsm_symbolic",
            "generator_version": GENERATOR_VERSION,
            "train_size": settings.train_size or 1000,
            "eval_size": settings.eval_size or 50,
            "split_seed": settings.split_seed,
        }

        def build(staging: Path) -> None:
            train, evals = data.offline_split(
                train_size=params["train_size"],
                eval_size=params["eval_size"],
                eval_seed=settings.split_seed,
                train_seed=settings.split_seed + 1,
            )
            self._write(staging, train, evals, params)

        return build_once(cache / f"{OFFLINE_SPLIT}-{params_digest(params)}", build), OFFLINE_SPLIT

    def _reference(self, cache: Path, settings: Settings) -> tuple[Path, str]:
        params: dict[str, Any] = {
            "source": settings.source,
            "train_size": settings.train_size,
            "eval_size": settings.eval_size,
            "protocol_version": REFERENCE_PROTOCOL_VERSION,
        }
        if settings.source == "local":
            assert settings.data_path is not None
            files = data.reference_files(settings.data_path)
            params["files"] = files_digest(files["train"] + files["test"])

        def build(staging: Path) -> None:
            if settings.source == "local":
                assert settings.data_path is not None
                train, test = data.local_reference(settings.data_path)
            else:
                train, test = data.hub_reference()
            test = trim(test, settings.eval_size)
            taken = {data.normalize_question(e["question"]) for e in test}
            kept = [e for e in train if data.normalize_question(e["question"]) not in taken]
            few_shot, few_shot_source = data.reference_shots(kept)
            self._write(
                staging,
                trim(kept, settings.train_size),
                test,
                {
                    **params,
                    "dropped_train_duplicates": len(train) - len(kept),
                    "few_shot": few_shot,
                    "few_shot_source": few_shot_source,
                },
            )

        name = REFERENCE_SPLIT
        if settings.train_size or settings.eval_size:
            name += f"-subset-{settings.train_size or 'all'}-{settings.eval_size or 'all'}"
        return build_once(cache / f"{REFERENCE_SPLIT}-{params_digest(params)}", build), name

    @staticmethod
    def _write(
        staging: Path, train: list[data.Example], evals: list[data.Example], params: dict
    ) -> None:
        write_split(staging, train, evals, params)

    @staticmethod
    def _kit(cache: Path, config: dict[str, Any] | None = None) -> Path:
        """``kit/autorl_kit.py``: a verbatim copy of the task's kit module; on real GSM8K with
        ``config.json`` beside it (the reference's protocol and worked examples), so the kit's
        ``build_messages`` is the whole prompt the grader sends."""
        return module_kit(cache, KIT_SOURCE, config)
