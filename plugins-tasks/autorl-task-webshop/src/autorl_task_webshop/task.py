"""The ``webshop`` task: splits and catalogue into the task cache, the kit and the description."""

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

from autorl.errors import ConfigError
from autorl.options import OptionsModel, PositiveInt
from autorl.options import describe as describe_options
from autorl.options import parse_options as validate
from autorl_task_webshop.catalog import Goal, Product, dump_json, load_goals, load_products
from autorl_task_webshop.description import describe

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"
KIT_DATA = "webshop_data"
ENV_MODULES = (
    "catalog.py",
    "env.py",
    "expert.py",
    "prompt.py",
    "reward.py",
    "search.py",
    "text.py",
)
"""Modules copied into ``kit/webshop_env/`` (relative imports and ``autorl_task_common``)."""
KIT = KitLayout(PACKAGE_DIR, "webshop_env", ENV_MODULES, "WebShop")

OFFLINE_SPLIT = "offline-catalog"
REFERENCE_SPLIT = "webshop-reference"
CONTRACTS = {
    "react": "autorl_task_webshop.protocol",
    "compact": "autorl_task_webshop.protocol_compact",
    "reference": "autorl_task_webshop.protocol_reference",
}
PROMPT_EVALUATOR_CONFIG: dict[str, dict[str, Any]] = {
    "react": {},
    "compact": {"max_new_tokens": 24, "batch_size": 40, "history_window": 4},
    "reference": {},
}
"""The compact prompt's actions are one line of at most ~18 tokens (SmolLM2 tokenizer); all 40
default sessions in one lockstep batch, so each decoding step serves every episode."""
SPLIT_DEFAULTS: dict[str, dict[str, Any]] = {
    OFFLINE_SPLIT: {"prompt": "compact", "eval_size": 40, "max_steps": 8},
    REFERENCE_SPLIT: {"prompt": "reference", "eval_size": 100, "max_steps": 50},
}
"""The reference protocol (official data): the reference implementation's prompt, 100 sessions,
50 steps. The offline
catalogue is sized for two CPU cores: the compact prompt (~280 tokens a step instead of ~1,000),
40 sessions, 8 steps (the expert needs at most 7)."""

EVALUATOR_CONFIG: dict[str, Any] = {
    "max_steps": 50,
    "max_new_tokens": 100,
    "batch_size": 16,
    "temperature": 0.0,
    "history_window": 5,
    "success_threshold": 0.5,
}
"""The reference's numbers: 50 steps, 100 new tokens, the last 5 turns in full, greedy, success
at reward 0.5 (tests/test_reference_protocol.py pins them)."""


class Options(OptionsModel):
    """``[task_options]`` of webshop."""

    data_path: Path | None = Field(
        None,
        description="directory with the official WebShop files (items_shuffle_1000.json, "
        "items_ins_v2_1000.json, items_human_ins.json); default: the shipped catalogue",
    )
    eval_size: PositiveInt | None = Field(
        None, description="held-out sessions (default 40 offline; 100 with data_path)"
    )
    train_size: PositiveInt | None = Field(None, description="cap on the train goals")
    max_steps: PositiveInt | None = Field(
        None, description="steps per session (default 8 offline; 50 with data_path)"
    )
    prompt: Literal["compact", "react", "reference"] | None = Field(
        None,
        description="the grader's prompt: compact (default offline), react (a one-shot ReAct "
        "chat) or reference (the reference implementation's zero-shot prompt; default with "
        "data_path)",
    )


OPTIONS = describe_options(Options)


@dataclass(frozen=True)
class Settings:
    data_path: Path | None
    eval_size: int
    train_size: int | None
    max_steps: int
    prompt: str

    @property
    def split(self) -> str:
        return OFFLINE_SPLIT if self.data_path is None else REFERENCE_SPLIT


def parse_options(options: Mapping[str, Any]) -> Settings:
    """Validate ``[task_options]``: unknown keys and bad values are errors, not silent defaults."""
    opts = validate(Options, options, who="task 'webshop'")
    path = opts.data_path.expanduser().resolve() if opts.data_path else None
    if path is not None and not path.is_dir():
        raise ConfigError(
            f"webshop: data_path {path} is not a directory",
            hint="point data_path at the folder holding items_shuffle_1000.json and friends",
        )
    defaults = SPLIT_DEFAULTS[OFFLINE_SPLIT if path is None else REFERENCE_SPLIT]
    return Settings(
        data_path=path,
        eval_size=opts.eval_size or defaults["eval_size"],
        train_size=opts.train_size,
        max_steps=opts.max_steps or defaults["max_steps"],
        prompt=opts.prompt or defaults["prompt"],
    )


class WebShopTask(InteractiveTask):
    """Interactive shopping: search, open, choose options, buy; success = reward >= 0.5 (L3)."""

    Options = Options
    """Its options model: a campaign checks them before any run starts."""

    name = "webshop"
    version = "1"
    offline_split = OFFLINE_SPLIT
    reference_split = REFERENCE_SPLIT
    contracts = CONTRACTS
    metric = "success_rate"
    kit_requires = ("rank-bm25",)
    describe = staticmethod(describe)
    parse_options = staticmethod(parse_options)

    def download(self, dest: Path) -> Path:
        """WebShop's files are on Google Drive, not on a hub this project can reach by an API:
        refused, saying which files to place where."""
        raise ConfigError(
            "webshop: the official files (items_shuffle_1000.json, items_ins_v2_1000.json, "
            "items_human_ins.json) are published on Google Drive by princeton-nlp/WebShop "
            "(its setup.sh), not on a data hub",
            hint=f"download them with that script's links into {dest}, then set "
            "task_options.data_path to it; see docs/reference.md",
        )

    def evaluator_config(self, settings: Settings, split: str, split_dir: Path) -> dict[str, Any]:
        return {
            **EVALUATOR_CONFIG,
            **PROMPT_EVALUATOR_CONFIG[settings.prompt],
            "max_steps": settings.max_steps,
            "catalog_path": str(split_dir / "catalog.json"),
        }

    def _offline(self, cache: Path, settings: Settings) -> Path:
        files = [DATA_DIR / n for n in ("catalog.json", "goals_train.json", "goals_eval.json")]
        params = split_params(settings, source="shipped", files=files_digest(files))

        def build(staging: Path) -> None:
            evals = load_goals(DATA_DIR / "goals_eval.json")
            if settings.eval_size > len(evals):
                raise ConfigError(
                    f"webshop: eval_size={settings.eval_size} but the shipped catalogue has "
                    f"{len(evals)} eval goals",
                    hint=f"use eval_size <= {len(evals)}",
                )
            train = load_goals(DATA_DIR / "goals_train.json")
            products = load_products(DATA_DIR / "catalog.json")
            self._write(staging, products, train, evals[: settings.eval_size], settings, params)

        return build_split(cache, OFFLINE_SPLIT, params, build)

    def _reference(self, cache: Path, settings: Settings) -> Path:
        from autorl_task_webshop import official

        assert settings.data_path is not None
        missing = official.missing_files(settings.data_path)
        if missing:
            raise ConfigError(
                f"webshop: data_path {settings.data_path} lacks {', '.join(missing)}",
                hint="it must hold the official items_shuffle_1000.json, items_ins_v2_1000.json "
                "and items_human_ins.json",
            )
        params = split_params(
            settings,
            source="official",
            files=files_digest([settings.data_path / n for n in official.FILES]),
        )

        def build(staging: Path) -> None:
            assert settings.data_path is not None
            products, train, evals, extra = official.load_official(
                settings.data_path, eval_size=settings.eval_size
            )
            self._write(staging, products, train, evals, settings, {**params, **extra})

        return build_split(cache, REFERENCE_SPLIT, params, build)

    @staticmethod
    def _write(
        staging: Path,
        products: list[Product],
        train: list[Goal],
        evals: list[Goal],
        settings: Settings,
        params: dict[str, Any],
    ) -> None:
        if settings.train_size is not None:
            train = train[: settings.train_size]
        dump_json(staging / "catalog.json", products)
        write_split(
            staging,
            [goal.to_dict() for goal in train],
            [goal.to_dict() for goal in evals],
            {**params, "n_products": len(products)},
        )

    @staticmethod
    def _kit(cache: Path, split_dir: Path, settings: Settings, config: dict[str, Any]) -> Path:
        """The kit: the env modules, the catalogue and the TRAIN goals only, and
        ``settings.json`` (the grader's prompt style, step limit and history window)."""
        kit_settings = {
            "prompt": settings.prompt,
            "max_steps": settings.max_steps,
            "history_window": config["history_window"],
        }

        def fill(staging: Path) -> None:
            data = staging / KIT_DATA
            data.mkdir()
            shutil.copyfile(split_dir / "catalog.json", data / "catalog.json")
            dump_json(data / "goals_train.json", load_goals(split_dir / "train.jsonl"))
            (data / "settings.json").write_text(json.dumps(kit_settings, indent=2) + "\n")

        return build_kit(cache, KIT, [split_dir.name, kit_settings], fill)
