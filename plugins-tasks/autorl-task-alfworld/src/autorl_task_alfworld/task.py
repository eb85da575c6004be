"""The ``alfworld`` task: games into the task cache, the train-only kit and the description."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from autorl_data.cache import files_digest, write_jsonl, write_split
from autorl_task_common.interactive import InteractiveTask, build_split, split_params
from autorl_task_common.kits import KitLayout, build_kit
from pydantic import Field

from autorl.errors import ConfigError
from autorl.options import OptionsModel, PositiveInt
from autorl.options import describe as describe_options
from autorl.options import parse_options as validate
from autorl_task_alfworld import official
from autorl_task_alfworld.description import describe
from autorl_task_alfworld.games import (
    GAME_FILE,
    TRAJ_FILE,
    GameRecord,
    engine_logic,
    materialize,
    read_records,
)
from autorl_task_alfworld.prompt import (
    HISTORY_WINDOW,
    REACT_PROMPTS_FILE,
    REFERENCE_MAX_NEW_TOKENS,
    load_react_prompts,
)
from autorl_task_alfworld.protocol_reference import file_sha256

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"
SHIPPED = {"train": DATA_DIR / "games_train.jsonl", "eval": DATA_DIR / "games_eval.jsonl"}
KIT_GAMES = "alfworld_games"
ENV_MODULES = ("env.py", "prompt.py", "games.py")
"""Self-contained modules (no autorl import) copied into ``kit/alfworld_env/``."""
KIT = KitLayout(PACKAGE_DIR, "alfworld_env", ENV_MODULES, "ALFWorld")

OFFLINE_SPLIT = "offline-generated"
REFERENCE_SPLIT = "alfworld-valid-unseen"
CONTRACTS = {
    "chat": "autorl_task_alfworld.protocol",
    "reference": "autorl_task_alfworld.protocol_reference",
}
"""The 'interactive' contract the rollout evaluator plays the games with, per prompt."""
CONTRACT = CONTRACTS["chat"]
KIT_EXAMPLES = REACT_PROMPTS_FILE
"""The examples file's name in the kit (public prompts, not held-out data)."""
DATA_ENV = "ALFWORLD_DATA"

EVALUATOR_CONFIG: dict[str, Any] = {
    "max_steps": 50,
    "max_new_tokens": 40,
    "batch_size": 16,
    "temperature": 0.0,
    "history_window": HISTORY_WINDOW,
}
"""50 steps and greedy decoding as the reference; 40 new tokens fit the longest action."""
REFERENCE_EVALUATOR_CONFIG: dict[str, Any] = {"max_new_tokens": 100, "history_window": 50}
"""With the official games, the reference's numbers: 100 new tokens and the whole history in the
prompt (a window of 50 turns never folds a 50-step episode); tests pin them."""
PROMPT_EVALUATOR_CONFIG: dict[str, dict[str, Any]] = {
    "chat": {},
    "reference": {"max_new_tokens": REFERENCE_MAX_NEW_TOKENS, "history_window": 50},
}
"""The reference prompt's numbers on any games: 100 new tokens (the window is unused: it sends
the whole history)."""


class Options(OptionsModel):
    """``[task_options]`` of alfworld."""

    data_path: Path | None = Field(
        None,
        description=f"an alfworld-download directory (holding {official.JSON_DIR}/); default "
        f"${DATA_ENV} when it holds the official games, else the shipped generated games",
    )
    eval_size: PositiveInt | None = Field(
        None, description="held-out games (default: all, 134 with the official data)"
    )
    train_size: PositiveInt | None = Field(None, description="cap on the train games")
    max_steps: PositiveInt = Field(50, description="steps per game before it ends unsolved")
    prompt: Literal["chat", "reference"] | None = Field(
        None,
        description="the grader's prompt: chat (our two examples through the chat template; "
        "default on the shipped games) or reference (the ReAct paper's raw-text prompt with "
        "its examples, as RD-Agent's autorl_bench; default with data_path)",
    )
    react_prompts: Path | None = Field(
        None,
        description=f"the ReAct examples file of prompt = reference (default "
        f"<data_path>/{REACT_PROMPTS_FILE}, written by autorl reference download)",
    )


OPTIONS = describe_options(Options)


@dataclass(frozen=True)
class Settings:
    data_path: Path | None
    eval_size: int | None
    train_size: int | None
    max_steps: int
    prompt: str = "chat"
    react_prompts: Path | None = None
    """The examples file (prompt = reference only), checked complete."""
    react_prompts_sha256: str | None = None


def parse_options(options: Mapping[str, Any], environ: Mapping[str, str] = os.environ) -> Settings:
    """Validate ``[task_options]``: unknown keys and bad values are errors, not silent defaults."""
    opts = validate(Options, options, who="task 'alfworld'")
    data_path = opts.data_path
    where = "task option data_path"
    if data_path is None and environ.get(DATA_ENV):
        # importing alfworld sets $ALFWORLD_DATA to its (often empty) download cache: use it
        # only when it holds the official games
        candidate = Path(environ[DATA_ENV]).expanduser()
        if candidate.is_dir() and not official.missing_parts(candidate):
            data_path = candidate
    path = Path(data_path).expanduser().resolve() if data_path else None
    if path is not None:
        if not path.is_dir():
            raise ConfigError(
                f"alfworld: {where} = {path} is not a directory",
                hint=f"run alfworld-download and point data_path at its folder, or unset "
                f"{DATA_ENV} to use the shipped games",
            )
        missing = official.missing_parts(path)
        if missing:
            raise ConfigError(
                f"alfworld: {where} = {path} lacks {', '.join(missing)}",
                hint=f"it must hold the official {official.JSON_DIR}/train and "
                f"{official.JSON_DIR}/valid_unseen game folders (alfworld-download)",
            )
    prompt = opts.prompt or ("chat" if path is None else "reference")
    examples = _examples_file(prompt, opts.react_prompts, path)
    return Settings(
        data_path=path,
        eval_size=opts.eval_size,
        train_size=opts.train_size,
        max_steps=opts.max_steps,
        prompt=prompt,
        react_prompts=examples,
        react_prompts_sha256=file_sha256(examples) if examples is not None else None,
    )


def _examples_file(prompt: str, option: Path | None, data_path: Path | None) -> Path | None:
    """The reference prompt's examples file, checked readable and complete; None for chat.
    Never a silent fallback: a reference prompt without its file is an error."""
    fix = (
        "run `autorl reference download DATA_DIR --task alfworld` (it also fetches the ReAct "
        f"examples prompts/alfworld_3prompts.json of github.com/ysymyth/ReAct as "
        f"{REACT_PROMPTS_FILE}), "
        'or set task option react_prompts to that file, or prompt = "chat"'
    )
    if prompt != "reference":
        if option is not None:
            raise ConfigError(
                'alfworld: task option react_prompts is only read with prompt = "reference"',
                hint='set prompt = "reference", or drop react_prompts',
            )
        return None
    if option is not None:
        path, where = Path(option).expanduser().resolve(), "task option react_prompts"
    elif data_path is not None:
        path, where = (
            data_path / REACT_PROMPTS_FILE,
            f"the default <data_path>/{REACT_PROMPTS_FILE}",
        )
    else:
        raise ConfigError(
            'alfworld: prompt = "reference" needs the ReAct examples file, and neither '
            "react_prompts nor data_path is set",
            hint=fix,
        )
    if not path.is_file():
        raise ConfigError(
            f"alfworld: the reference prompt's examples file {path} ({where}) does not exist",
            hint=fix,
        )
    try:
        load_react_prompts(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"alfworld: the reference prompt's examples file ({where}) is unusable: {exc}",
            hint=fix,
        ) from None
    return path


def _dir_name(session_id: str) -> str:
    return session_id.replace("/", "__")


class AlfWorldTask(InteractiveTask):
    """Household text games in the real ALFWorld engine; success rate over held-out games."""

    Options = Options
    """Its options model: a campaign checks them before any run starts."""

    name = "alfworld"
    version = "1"
    offline_split = OFFLINE_SPLIT
    reference_split = REFERENCE_SPLIT
    contracts = CONTRACTS
    metric = "success_rate"
    kit_requires = ("alfworld", "textworld[pddl]")
    describe = staticmethod(describe)
    parse_options = staticmethod(parse_options)

    def download(self, dest: Path) -> Path:
        """The reference prompt's examples (``dest/alfworld_3prompts.json``, from the ReAct
        repository on GitHub, SHA-256 checked; first, as it fails fast offline), then ALFWorld's
        own downloader (``alfworld-download --data-dir dest``: the json_2.1.1 games, ~2 GB from
        GitHub releases); then ``data_path = dest`` (or ``$ALFWORLD_DATA``)."""
        import sys

        from autorl_data.fetch import command

        target = Path(dest) / REACT_PROMPTS_FILE
        try:
            official.fetch_react_prompts(target)
        except (OSError, ValueError) as exc:  # no route, HTTP error, timeout, wrong bytes
            raise ConfigError(
                f"alfworld: cannot fetch the ReAct examples {official.REACT_PROMPTS_URL}: "
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                hint=f"run where raw.githubusercontent.com is reachable, or save "
                f"prompts/alfworld_3prompts.json of github.com/ysymyth/ReAct as {target} by "
                "hand; see docs/tasks/alfworld.md",
            ) from None
        tool = Path(sys.executable).with_name("alfworld-download")
        return command([str(tool), "--data-dir", str(dest)], dest, who="alfworld")

    def evaluator_config(self, settings: Settings, split: str, split_dir: Path) -> dict[str, Any]:
        config: dict[str, Any] = {
            **EVALUATOR_CONFIG,
            **(REFERENCE_EVALUATOR_CONFIG if split == REFERENCE_SPLIT else {}),
            **PROMPT_EVALUATOR_CONFIG[settings.prompt],
            "max_steps": settings.max_steps,
        }
        if settings.react_prompts is not None:
            config["react_prompts"] = str(settings.react_prompts)
            config["react_prompts_sha256"] = settings.react_prompts_sha256
        return config

    def _offline(self, cache: Path, settings: Settings) -> Path:
        params = split_params(
            settings, source="shipped", files=files_digest(list(SHIPPED.values()))
        )

        def build(staging: Path) -> None:
            evals = read_records(SHIPPED["eval"])
            if settings.eval_size is not None and settings.eval_size > len(evals):
                raise ConfigError(
                    f"alfworld: eval_size={settings.eval_size} but the shipped set has "
                    f"{len(evals)} eval games",
                    hint=f"use eval_size <= {len(evals)}, or the official games (data_path)",
                )
            train = read_records(SHIPPED["train"])[: settings.train_size]
            evals = evals[: settings.eval_size]
            domain, grammar = engine_logic()
            eval_rows = []
            for record in evals:
                materialize(record, staging / "eval_games" / record.id, domain, grammar)
                eval_rows.append(_row(record, game_file=f"eval_games/{record.id}/{GAME_FILE}"))
            for record in train:
                materialize(record, staging / "train_games" / record.id, domain, grammar)
            train_rows = [{**_row(record), "layout": record.layout} for record in train]
            write_split(staging, train_rows, eval_rows, params)

        return build_split(cache, OFFLINE_SPLIT, params, build)

    def _reference(self, cache: Path, settings: Settings) -> Path:
        assert settings.data_path is not None
        data_path = settings.data_path
        params = split_params(settings, source="official", data_path=str(data_path))

        def build(staging: Path) -> None:
            evals = official.collect(data_path, official.EVAL_SPLIT)
            size = settings.eval_size or len(evals)
            if not evals or size > len(evals):
                raise ConfigError(
                    f"alfworld: {data_path}/{official.JSON_DIR}/{official.EVAL_SPLIT} holds "
                    f"{len(evals)} solvable games, {size} asked",
                    hint=f"the reference protocol uses {official.REFERENCE_EVAL_SIZE}; lower "
                    "eval_size or re-run alfworld-download",
                )
            eval_rows = [
                {
                    "session_id": row["session_id"],
                    "task_type": row["task_type"],
                    "goal": row["goal"],
                    "game_file": str(row["game_dir"] / GAME_FILE),
                }
                for row in evals[:size]
            ]
            train = official.collect(data_path, official.TRAIN_SPLIT)[: settings.train_size]
            train_rows = []
            for row in train:
                target = staging / "train_games" / _dir_name(row["session_id"])
                target.mkdir(parents=True)
                shutil.copyfile(row["game_dir"] / GAME_FILE, target / GAME_FILE)
                slim = {"task_type": row["task_type"], "pddl_params": row["pddl_params"]}
                (target / TRAJ_FILE).write_text(json.dumps(slim), encoding="utf-8")
                train_rows.append(
                    {
                        "session_id": row["session_id"],
                        "task_type": row["task_type"],
                        "goal": row["goal"],
                    }
                )
            write_split(staging, train_rows, eval_rows, params)

        return build_split(cache, REFERENCE_SPLIT, params, build)

    @staticmethod
    def _kit(cache: Path, split_dir: Path, settings: Settings, config: dict[str, Any]) -> Path:
        """The kit: the env modules, the TRAIN games only (``index.jsonl``, ``config.json``: the
        grader's step limit, history window and prompt) and, with the reference prompt, its
        examples file (public prompts)."""
        grader = {
            "max_steps": settings.max_steps,
            "history_window": config["history_window"],
            "prompt": settings.prompt,
        }

        def fill(staging: Path) -> None:
            games = staging / KIT_GAMES
            shutil.copytree(split_dir / "train_games", games)
            rows = [json.loads(line) for line in (split_dir / "train.jsonl").open()]
            index = [
                {
                    "session_id": r["session_id"],
                    "task_type": r["task_type"],
                    "goal": r["goal"],
                    "dir": _dir_name(r["session_id"]),
                }
                for r in rows
            ]
            write_jsonl(games / "index.jsonl", index)
            (games / "config.json").write_text(json.dumps(grader) + "\n", encoding="utf-8")
            if settings.react_prompts is not None:
                shutil.copyfile(settings.react_prompts, staging / KIT_EXAMPLES)

        return build_kit(
            cache, KIT, [split_dir.name, *grader.values(), settings.react_prompts_sha256], fill
        )


def _row(record: GameRecord, **extra: str) -> dict[str, Any]:
    return {"session_id": record.id, "task_type": record.task_type, "goal": record.goal, **extra}
