"""The ``alfworld`` task: games into the task cache, the train-only kit and the description."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl.taskcache import build_once, files_digest, params_digest
from autorl.types import PreparedTask, TaskContext
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
from autorl_task_alfworld.prompt import HISTORY_WINDOW

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"
SHIPPED = {"train": DATA_DIR / "games_train.jsonl", "eval": DATA_DIR / "games_eval.jsonl"}
KIT_NAME = "autorl_kit.py"
KIT_PACKAGE = "alfworld_env"
KIT_GAMES = "alfworld_games"
ENV_MODULES = ("env.py", "prompt.py", "games.py")
"""Self-contained modules (no autorl import) copied into ``kit/alfworld_env/``."""

OFFLINE_SPLIT = "offline-generated"
REFERENCE_SPLIT = "alfworld-valid-unseen"
PROTOCOL_MODULE = "autorl_task_alfworld.protocol"
DATA_ENV = "ALFWORLD_DATA"

EVALUATOR_CONFIG: dict[str, Any] = {
    "protocol": PROTOCOL_MODULE,
    "max_steps": 50,
    "max_new_tokens": 40,
    "batch_size": 16,
    "temperature": 0.0,
    "history_window": HISTORY_WINDOW,
}
"""50 steps and greedy decoding as the reference; 40 new tokens fit the longest action."""

OPTIONS = {
    "data_path": f"an alfworld-download directory (holding {official.JSON_DIR}/); default "
    f"${DATA_ENV} when it holds the official games, else the shipped generated games",
    "eval_size": "number of held-out games (default: all, 134 with the official data)",
    "train_size": "cap on the number of train games (default: all)",
    "max_steps": "steps per game before it ends unsolved (default 50)",
}


@dataclass(frozen=True)
class Settings:
    data_path: Path | None
    eval_size: int | None
    train_size: int | None
    max_steps: int


def _positive_int(options: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = options.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"alfworld: task option {key}={value!r} must be a positive integer",
            hint=f"set [task_options] {key} = {default or 40}, or leave it out",
        )
    return value


def parse_options(options: Mapping[str, Any], environ: Mapping[str, str] = os.environ) -> Settings:
    """Validate ``[task_options]``: unknown keys and bad values are errors, not silent defaults."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        listed = "; ".join(f"{k}: {v}" for k, v in OPTIONS.items())
        raise ConfigError(
            f"alfworld: unknown task option(s) {', '.join(map(repr, unknown))}",
            hint=f"known options: {listed}",
        )
    data_path = options.get("data_path")
    where = "task option data_path"
    if data_path is None and environ.get(DATA_ENV):
        # importing alfworld sets $ALFWORLD_DATA to its (often empty) download cache: use it
        # only when it holds the official games
        candidate = Path(environ[DATA_ENV]).expanduser()
        if candidate.is_dir() and not official.missing_parts(candidate):
            data_path = str(candidate)
    if data_path is not None and not isinstance(data_path, str | os.PathLike):
        raise ConfigError(
            f"alfworld: task option data_path={data_path!r} must be a path string",
            hint="point it at the directory alfworld-download filled",
        )
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
    max_steps = _positive_int(options, "max_steps", 50)
    assert max_steps is not None
    return Settings(
        data_path=path,
        eval_size=_positive_int(options, "eval_size", None),
        train_size=_positive_int(options, "train_size", None),
        max_steps=max_steps,
    )


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text(
        "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows),
        encoding="utf-8",
    )


def _dir_name(session_id: str) -> str:
    return session_id.replace("/", "__")


class AlfWorldTask:
    """Household text games in the real ALFWorld engine; success rate over held-out games."""

    name = "alfworld"
    version = "1"

    def prepare(self, ctx: TaskContext) -> PreparedTask:
        settings = parse_options(ctx.options)
        cache = Path(ctx.cache_dir)
        if settings.data_path is None:
            split_dir, split = self._offline(cache, settings), OFFLINE_SPLIT
        else:
            split_dir, split = self._reference(cache, settings), REFERENCE_SPLIT
        meta = json.loads((split_dir / "meta.json").read_text(encoding="utf-8"))
        config = {**EVALUATOR_CONFIG, "max_steps": settings.max_steps}
        return PreparedTask(
            train_files=(split_dir / "train.jsonl",),
            eval_path=split_dir / "eval.jsonl",
            description=describe(
                split=split, n_train=meta["n_train"], n_eval=meta["n_eval"], evaluator_config=config
            ),
            evaluator="rollout",
            evaluator_config=config,
            kit_dir=self._kit(cache, split_dir, settings.max_steps),
            kit_requires=("alfworld", "textworld[pddl]"),
            split=split,
            metric="success_rate",
        )

    def _offline(self, cache: Path, settings: Settings) -> Path:
        params = {
            "source": "shipped",
            "files": files_digest(list(SHIPPED.values())),
            "eval_size": settings.eval_size,
            "train_size": settings.train_size,
        }

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
            self._finish(staging, train_rows, eval_rows, params)

        return build_once(cache / f"{OFFLINE_SPLIT}-{params_digest(params)}", build)

    def _reference(self, cache: Path, settings: Settings) -> Path:
        assert settings.data_path is not None
        data_path = settings.data_path
        params = {
            "source": "official",
            "data_path": str(data_path),
            "eval_size": settings.eval_size,
            "train_size": settings.train_size,
        }

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
            self._finish(staging, train_rows, eval_rows, params)

        return build_once(cache / f"{REFERENCE_SPLIT}-{params_digest(params)}", build)

    @staticmethod
    def _finish(
        staging: Path,
        train_rows: list[dict[str, Any]],
        eval_rows: list[dict[str, Any]],
        params: dict[str, Any],
    ) -> None:
        _write_jsonl(staging / "train.jsonl", train_rows)
        _write_jsonl(staging / "eval.jsonl", eval_rows)
        meta = {**params, "n_train": len(train_rows), "n_eval": len(eval_rows)}
        (staging / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    @staticmethod
    def _kit(cache: Path, split_dir: Path, max_steps: int) -> Path:
        """``kit/``: ``autorl_kit.py``, the env modules and the TRAIN games only."""
        digest = hashlib.sha256()
        for name in (*ENV_MODULES, "kit.py"):
            digest.update((PACKAGE_DIR / name).read_bytes())
        digest.update(f"{split_dir.name}/{max_steps}".encode())
        target = cache / f"kit-{digest.hexdigest()[:12]}"

        def build(staging: Path) -> None:
            package = staging / KIT_PACKAGE
            package.mkdir()
            (package / "__init__.py").write_text(
                '"""The ALFWorld environment (a copy of the grader\'s modules)."""\n',
                encoding="utf-8",
            )
            for name in ENV_MODULES:
                shutil.copyfile(PACKAGE_DIR / name, package / name)
            shutil.copytree(split_dir / "train_games", staging / KIT_GAMES)
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
            _write_jsonl(staging / KIT_GAMES / "index.jsonl", index)
            (staging / KIT_GAMES / "config.json").write_text(
                json.dumps({"max_steps": max_steps}) + "\n", encoding="utf-8"
            )
            shutil.copyfile(PACKAGE_DIR / "kit.py", staging / KIT_NAME)

        return build_once(target, build, marker=KIT_NAME)


def _row(record: GameRecord, **extra: str) -> dict[str, Any]:
    return {"session_id": record.id, "task_type": record.task_type, "goal": record.goal, **extra}
