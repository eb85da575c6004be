"""The ``deepsearchqa`` task: splits into the task cache, the evaluator config, the kit."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from autorl_data.cache import files_digest, write_split
from autorl_task_common.interactive import InteractiveTask, build_split, split_params
from autorl_task_common.kits import KitLayout, build_kit
from pydantic import Field

from autorl.errors import AutorlError, ConfigError
from autorl.options import OptionsModel, PositiveInt
from autorl.options import describe as describe_options
from autorl.options import parse_options as validate
from autorl_task_deepsearchqa.corpus import (
    Question,
    load_questions,
    write_json,
)
from autorl_task_deepsearchqa.description import describe
from autorl_task_deepsearchqa.env import DEFAULT_MAX_STEPS, DEFAULT_TOP_K
from autorl_task_deepsearchqa.prompt import HISTORY_WINDOW
from autorl_task_deepsearchqa.prompt_reference import MAX_NEW_TOKENS as REFERENCE_MAX_NEW_TOKENS

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"
KIT_DATA = "deepsearchqa_data"
ENV_MODULES = (
    "bm25.py",
    "corpus.py",
    "env.py",
    "env_reference.py",
    "expert.py",
    "prompt.py",
    "prompt_reference.py",
    "rules.py",
    "text.py",
)
"""Copied to the kit (relative imports, ``autorl_task_common``, stdlib + rank_bm25)."""
KIT = KitLayout(PACKAGE_DIR, "deepsearchqa_env", ENV_MODULES, "DeepSearchQA")

OFFLINE_SPLIT = "offline-encyclopedia"
REFERENCE_SPLIT = "deepsearchqa-reference"
CONTRACTS = {
    "chat": "autorl_task_deepsearchqa.protocol",
    "reference": "autorl_task_deepsearchqa.protocol_reference",
}
"""The 'interactive' contract the rollout evaluator plays the questions with, per prompt."""
CONTRACT = CONTRACTS["chat"]

EVALUATOR_CONFIG: dict[str, Any] = {
    "max_steps": DEFAULT_MAX_STEPS,
    "top_k": DEFAULT_TOP_K,
    "search_backend": "bm25",
    "judge": "rule",
    "max_new_tokens": 64,
    "batch_size": 16,
    "temperature": 0.0,
    "history_window": HISTORY_WINDOW,
}
"""6 steps as the reference; 64 new tokens hold the longest expert action (a 4-item set answer:
48 tokens with the tiny model's tokenizer)."""
REFERENCE_EVALUATOR_CONFIG: dict[str, Any] = {"max_new_tokens": REFERENCE_MAX_NEW_TOKENS}
"""On the real data set, the reference's limit per step (RD-Agent's DeepSearchQA eval)."""
PROMPT_EVALUATOR_CONFIG: dict[str, dict[str, Any]] = {
    "chat": {},
    "reference": {"max_new_tokens": REFERENCE_MAX_NEW_TOKENS, "temperature": 0.0},
}
"""The reference prompt's numbers on any data: 256 new tokens a step, greedy (its stops are
the protocol's ``STOP``; its 6 steps the ``max_steps`` default)."""


class Options(OptionsModel):
    """``[task_options]`` of deepsearchqa."""

    data_path: Path | None = Field(
        None,
        description="a local copy of google/deepsearchqa (DSQA-full.csv or its folder); "
        "default: the shipped encyclopedia questions",
    )
    eval_size: PositiveInt | None = Field(
        None, description="held-out questions (default: 100 shipped, 200 reference)"
    )
    train_size: PositiveInt = Field(100, description="train questions")
    max_steps: PositiveInt = Field(
        DEFAULT_MAX_STEPS, le=50, description="steps per episode before it ends unanswered"
    )
    search_backend: str = Field(
        "bm25", description="registered search backend: bm25 (offline) or brave (web)"
    )
    top_k: PositiveInt = Field(DEFAULT_TOP_K, le=20, description="results per search")
    judge: str = Field("rule", description="'rule' (offline) or an LLM judge '<backend>/<model>'")
    prompt: Literal["chat", "reference"] | None = Field(
        None,
        description="the grader's prompt: chat (our ReAct chat, one action per line; default on "
        "the shipped data) or reference (the reference implementation's raw-text ReAct loop and "
        "judge prompt; default with data_path)",
    )
    replay: Path | None = Field(
        None,
        description="records directory of an earlier evaluation: searches and judge calls "
        "are answered from it, offline",
    )


OPTIONS = describe_options(Options)


@dataclass(frozen=True)
class Settings:
    data_path: Path | None
    eval_size: int
    train_size: int
    max_steps: int
    search_backend: str
    top_k: int
    judge: str
    replay: Path | None
    prompt: str = "chat"


def _path(value: Path | None, key: str, *, must: str) -> Path | None:
    if value is None:
        return None
    path = value.expanduser().resolve()
    exists = path.exists() if must == "exist" else path.is_dir()
    if not exists:
        problem = "does not exist" if must == "exist" else "is not a directory"
        raise ConfigError(
            f"deepsearchqa: {key} {path} {problem}",
            hint=OPTIONS[key],
        )
    return path


def _check_search_backend(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            f"deepsearchqa: task option search_backend={name!r} must be a backend name",
            hint="search_backend = 'bm25' (offline) or 'brave' (web)",
        )
    from autorl.registry import get_registry

    try:
        get_registry().get("search_backend", name)
    except AutorlError as exc:
        raise ConfigError(
            f"deepsearchqa: task option search_backend: {exc.message}",
            hint="'autorl list search_backend' shows the installed backends",
        ) from exc
    return name


def _check_judge(judge: Any) -> str:
    if judge == "rule":
        return judge
    if not isinstance(judge, str) or "/" not in judge:
        raise ConfigError(
            f"deepsearchqa: task option judge={judge!r} must be 'rule' or '<backend>/<model>'",
            hint="judge = 'rule' (offline) or judge = 'openai/gpt-4o-mini' (a driver name)",
        )
    from autorl.registry import get_registry

    backend = judge.split("/", 1)[0]
    try:
        get_registry().get("driver", backend)
    except AutorlError as exc:
        raise ConfigError(
            f"deepsearchqa: task option judge={judge!r}: {exc.message}",
            hint=exc.hint or "install the driver backend, e.g. pip install autorl-driver-openai",
        ) from exc
    return judge


def parse_options(options: Mapping[str, Any]) -> Settings:
    """Validate ``[task_options]``: unknown keys and bad values are errors, not silent defaults."""
    opts = validate(Options, options, who="task 'deepsearchqa'")
    data_path = _path(opts.data_path, "data_path", must="exist")
    return Settings(
        data_path=data_path,
        eval_size=opts.eval_size or (200 if data_path else 100),
        train_size=opts.train_size,
        max_steps=opts.max_steps,
        search_backend=_check_search_backend(opts.search_backend),
        top_k=opts.top_k,
        judge=_check_judge(opts.judge),
        replay=_path(opts.replay, "replay", must="dir"),
        prompt=opts.prompt or ("chat" if data_path is None else "reference"),
    )


class DeepSearchQATask(InteractiveTask):
    """Multi-hop question answering with search: accuracy judged per answer (L3)."""

    Options = Options
    """Its options model: a campaign checks them before any run starts."""

    name = "deepsearchqa"
    version = "1"
    offline_split = OFFLINE_SPLIT
    reference_split = REFERENCE_SPLIT
    contracts = CONTRACTS
    metric = "accuracy"
    kit_requires = ("rank-bm25",)
    describe = staticmethod(describe)
    parse_options = staticmethod(parse_options)

    def download(self, dest: Path) -> Path:
        """``google/deepsearchqa`` (its CSV of 900 questions) into ``dest``; then
        ``data_path = dest`` and the reference split (seed 42, 100/200) is made from it."""
        from autorl_data.fetch import hub_dataset

        return hub_dataset("google/deepsearchqa", dest, ["*.csv"], who="deepsearchqa")

    def evaluator_config(self, settings: Settings, split: str, split_dir: Path) -> dict[str, Any]:
        config: dict[str, Any] = {
            **EVALUATOR_CONFIG,
            **(REFERENCE_EVALUATOR_CONFIG if split == REFERENCE_SPLIT else {}),
            **PROMPT_EVALUATOR_CONFIG[settings.prompt],
            "max_steps": settings.max_steps,
            "top_k": settings.top_k,
            "search_backend": settings.search_backend,
            "judge": settings.judge,
            "corpus_path": str(split_dir / "corpus.json"),
        }
        if settings.replay is not None:
            config["replay"] = str(settings.replay)
        return config

    def _offline(self, cache: Path, settings: Settings) -> Path:
        names = ("corpus.json", "questions_train.json", "questions_eval.json")
        files = [DATA_DIR / n for n in names]
        params = split_params(settings, source="shipped", files=files_digest(files))

        def build(staging: Path) -> None:
            evals = load_questions(DATA_DIR / "questions_eval.json")
            train = load_questions(DATA_DIR / "questions_train.json")
            for key, wanted, have in (
                ("eval_size", settings.eval_size, len(evals)),
                ("train_size", settings.train_size, len(train)),
            ):
                if wanted > have:
                    raise ConfigError(
                        f"deepsearchqa: {key}={wanted} but the shipped data has {have}",
                        hint=f"use {key} <= {have}",
                    )
            shutil.copyfile(DATA_DIR / "corpus.json", staging / "corpus.json")
            self._write(staging, train[: settings.train_size], evals[: settings.eval_size], params)

        return build_split(cache, OFFLINE_SPLIT, params, build)

    def _reference(self, cache: Path, settings: Settings) -> Path:
        from autorl_task_deepsearchqa import official

        assert settings.data_path is not None
        source = official.find_file(settings.data_path)
        params = {
            **split_params(settings, source="google/deepsearchqa", file=files_digest([source])),
            "seed": official.SPLIT_SEED,
        }

        def build(staging: Path) -> None:
            questions = official.load_questions(source)
            train, evals = official.reference_split(
                questions, settings.train_size, settings.eval_size
            )
            # no local corpus answers real questions; bm25 then searches the shipped one
            shutil.copyfile(DATA_DIR / "corpus.json", staging / "corpus.json")
            self._write(staging, train, evals, {**params, "n_total": len(questions)})

        return build_split(cache, REFERENCE_SPLIT, params, build)

    @staticmethod
    def _write(
        staging: Path, train: list[Question], evals: list[Question], params: dict[str, Any]
    ) -> None:
        write_split(staging, [q.to_dict() for q in train], [q.to_dict() for q in evals], params)

    @staticmethod
    def _kit(cache: Path, split_dir: Path, settings: Settings, config: dict[str, Any]) -> Path:
        """The kit: the env modules, the corpus and the TRAIN questions only, and
        ``settings.json`` (the grader's step limit, results per search, window and prompt)."""
        kit_settings = {
            "max_steps": settings.max_steps,
            "top_k": settings.top_k,
            "history_window": HISTORY_WINDOW,
            "prompt": settings.prompt,
        }

        def fill(staging: Path) -> None:
            data = staging / KIT_DATA
            data.mkdir()
            shutil.copyfile(split_dir / "corpus.json", data / "corpus.json")
            write_json(data / "questions_train.json", load_questions(split_dir / "train.jsonl"))
            (data / "settings.json").write_text(json.dumps(kit_settings) + "\n", encoding="utf-8")

        return build_kit(cache, KIT, [split_dir.name, kit_settings], fill)
