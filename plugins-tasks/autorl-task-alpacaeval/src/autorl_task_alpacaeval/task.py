"""The ``alpacaeval`` task: prepares the splits, the kit and the description; names the judge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl_data.cache import (
    build_once,
    files_digest,
    params_digest,
    write_split,
)
from autorl_evaluator_judge.options import SCRIPTED_JUDGE, judge_driver_name
from autorl_task_common.kits import module_kit
from autorl_task_common.splits import split_task
from pydantic import Field, field_validator

from autorl.options import OptionsModel, PositiveInt
from autorl.options import describe as describe_options
from autorl.options import parse_options as validate
from autorl.types import PreparedTask, TaskContext
from autorl_task_alpacaeval import data
from autorl_task_alpacaeval.description import describe

KIT_SOURCE = Path(__file__).with_name("kit.py")
CONTRACT = "autorl_task_alpacaeval.kit"
"""The 'judge' contract (the answer prompt): loaded from the installed package by the engine,
never from the workspace copy of the kit."""
JUDGE_DIR = Path(__file__).resolve().parent / "judge"
"""The offline default judge: the scripted driver with the script shipped next to this file."""

OFFLINE_SPLIT = "offline-alpacaeval-style"
REFERENCE_SPLIT = "alpacaeval2-reference"

EVALUATOR_CONFIG: dict[str, Any] = {
    "max_new_tokens": 256,
    "batch_size": 8,
    "temperature": 0.0,
}
"""Greedy decoding, 256 new tokens on the offline split (its references are at most ~120
tokens)."""
REFERENCE_MAX_NEW_TOKENS = 512
"""On the reference data: the reference's own limit (RD-Agent ``autorl_bench``
``benchmarks/alpacaeval/eval.py``: ``max_tokens`` 512, greedy, one user turn through the chat
template, the output stripped). ``evaluator_options`` can lower it for a CPU."""


class Options(OptionsModel):
    """``[task_options]`` of alpacaeval."""

    data_path: Path | None = Field(
        None,
        description="directory with the real data (alpaca_eval_gpt4_baseline.json + "
        "alpaca_data.json or train-*.parquet; optional instruction_difficulty.csv, df_gamed.csv)",
    )
    train_size: PositiveInt | None = Field(
        None, description="train examples (offline: all 131; reference: first 2,000)"
    )
    eval_size: PositiveInt | None = Field(
        None, description="eval examples (offline: all 52; reference: all 805)"
    )
    judge: str = Field(SCRIPTED_JUDGE, description="judge driver, <backend>/<model>")

    _driver_name = field_validator("judge")(judge_driver_name)


OPTIONS = describe_options(Options)


@dataclass(frozen=True)
class Settings:
    data_path: Path | None
    train_size: int | None
    eval_size: int | None
    judge: str


def parse_options(options: Mapping[str, Any]) -> Settings:
    """Validate ``[task_options]``: unknown keys and bad values are errors, not silent defaults."""
    opts = validate(Options, options, who="task 'alpacaeval'")
    return Settings(
        data_path=opts.data_path.expanduser().resolve() if opts.data_path else None,
        train_size=opts.train_size,
        eval_size=opts.eval_size,
        judge=opts.judge,
    )


class AlpacaEvalTask:
    """Instruction following judged pairwise against reference answers (L2, LLM judge)."""

    Options = Options
    """Its options model: a campaign checks them before any run starts."""

    name = "alpacaeval"
    version = "1"

    def download(self, dest: Path) -> Path:
        """The AlpacaEval 2.0 prompts and references (``tatsu-lab/alpaca_eval``: the gpt4
        baseline JSON and the GLM's two tables) and the Alpaca train data (``tatsu-lab/alpaca``
        parquet) into ``dest``; then ``data_path = dest``."""
        from autorl_data.fetch import hub_dataset

        tables = ["alpaca_eval_gpt4_baseline.json", "instruction_difficulty.csv", "df_gamed.csv"]
        hub_dataset(
            "tatsu-lab/alpaca_eval", dest, [f"**{name}" for name in tables], who="alpacaeval"
        )
        return hub_dataset(
            "tatsu-lab/alpaca", dest, ["*.parquet", "**/*.parquet"], who="alpacaeval"
        )

    def prepare(self, ctx: TaskContext) -> PreparedTask:
        settings = parse_options(ctx.options)
        cache = Path(ctx.cache_dir)
        glm_dir: Path | None = None
        if settings.data_path is None:
            split_dir = self._offline(cache, settings)
            split_name = OFFLINE_SPLIT
        else:
            files = data.reference_files(settings.data_path)
            split_dir = self._reference(cache, settings, files)
            split_name = REFERENCE_SPLIT
            glm_dir = files["glm_dir"]
        if settings.train_size or settings.eval_size:
            split_name += f"-subset-{settings.train_size or 'all'}-{settings.eval_size or 'all'}"
        config = {
            **EVALUATOR_CONFIG,
            **({} if settings.data_path is None else {"max_new_tokens": REFERENCE_MAX_NEW_TOKENS}),
            "judge": settings.judge,
            "glm": "length_controlled_v1" if glm_dir else "length_controlled_minimal",
            "glm_data_dir": str(glm_dir) if glm_dir else None,
            "cache_dir": str(cache / "judge-cache"),
            "scripts_dir": str(JUDGE_DIR),
        }
        return split_task(
            split_dir,
            split_name,
            describe,
            config,
            evaluator="judge",
            contract=CONTRACT,
            kit_dir=self._kit(cache),
            metric="length-controlled win rate",
        )

    def _offline(self, cache: Path, settings: Settings) -> Path:
        train, evals = data.offline()
        params = {
            "source": "offline",
            "files": files_digest([data.OFFLINE_TRAIN, data.OFFLINE_EVAL]),
            "train_size": settings.train_size,
            "eval_size": settings.eval_size,
        }

        def build(staging: Path) -> None:
            self._write(staging, train[: settings.train_size], evals[: settings.eval_size], params)

        return build_once(cache / f"{OFFLINE_SPLIT}-{params_digest(params)}", build)

    def _reference(self, cache: Path, settings: Settings, files: dict[str, Path | None]) -> Path:
        params = {
            "source": "local",
            "files": files_digest([p for p in (files["eval"], files["train"]) if p]),
            "train_size": settings.train_size,
            "eval_size": settings.eval_size,
        }

        def build(staging: Path) -> None:
            train, evals, dropped = data.local(files, settings.train_size)
            self._write(
                staging,
                train,
                evals[: settings.eval_size],
                {**params, "dropped_train_duplicates": dropped},
            )

        return build_once(cache / f"{REFERENCE_SPLIT}-{params_digest(params)}", build)

    @staticmethod
    def _write(staging: Path, train: list[dict], evals: list[dict], params: dict) -> None:
        write_split(staging, train, evals, params)

    @staticmethod
    def _kit(cache: Path) -> Path:
        """``kit/autorl_kit.py``: a verbatim copy of the task's kit module."""
        return module_kit(cache, KIT_SOURCE)
