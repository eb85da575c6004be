"""The ``deepsearchqa`` task: splits into the task cache, the evaluator config, the kit."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.errors import AutorlError, ConfigError
from autorl.taskcache import build_once, params_digest
from autorl.types import PreparedTask, TaskContext
from autorl_task_deepsearchqa.corpus import (
    Question,
    load_questions,
    write_json,
    write_questions_jsonl,
)
from autorl_task_deepsearchqa.description import describe
from autorl_task_deepsearchqa.env import DEFAULT_MAX_STEPS, DEFAULT_TOP_K
from autorl_task_deepsearchqa.prompt import HISTORY_WINDOW

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"
KIT_NAME = "autorl_kit.py"
KIT_PACKAGE = "deepsearchqa_env"
KIT_DATA = "deepsearchqa_data"
ENV_MODULES = ("bm25.py", "corpus.py", "env.py", "expert.py", "prompt.py", "rules.py", "text.py")
"""Self-contained modules (relative imports, standard library + rank_bm25) copied to the kit."""

OFFLINE_SPLIT = "offline-encyclopedia"
REFERENCE_SPLIT = "deepsearchqa-reference"
PROTOCOL_MODULE = "autorl_task_deepsearchqa.protocol"

EVALUATOR_CONFIG: dict[str, Any] = {
    "protocol": PROTOCOL_MODULE,
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

OPTIONS = {
    "data_path": "a local copy of google/deepsearchqa (DSQA-full.csv or its folder); default: "
    "the shipped encyclopedia questions",
    "eval_size": "held-out questions (default: 100 shipped, 200 reference)",
    "train_size": "train questions (default 100)",
    "max_steps": "steps per episode before it ends unanswered (default 6)",
    "search_backend": "registered search backend: bm25 (default, offline) or brave (web, needs "
    "BRAVE_API_KEY)",
    "top_k": "results per search (default 3)",
    "judge": "'rule' (default, offline) or an LLM judge '<backend>/<model>' such as "
    "openai/gpt-4o-mini",
    "replay": "records directory of an earlier evaluation: searches and judge calls are "
    "answered from it, offline",
}


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


def _positive_int(options: Mapping[str, Any], key: str, default: int, cap: int = 10**6) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= cap:
        raise ConfigError(
            f"deepsearchqa: task option {key}={value!r} must be an integer from 1 to {cap}",
            hint=f"set [task_options] {key} = {default}",
        )
    return value


def _path(options: Mapping[str, Any], key: str, *, must: str) -> Path | None:
    value = options.get(key)
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike) or not str(value).strip():
        raise ConfigError(f"deepsearchqa: task option {key}={value!r} must be a path string")
    path = Path(value).expanduser().resolve()
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
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        listed = "; ".join(f"{k}: {v}" for k, v in OPTIONS.items())
        raise ConfigError(
            f"deepsearchqa: unknown task option(s) {', '.join(map(repr, unknown))}",
            hint=f"known options: {listed}",
        )
    data_path = _path(options, "data_path", must="exist")
    default_eval = 200 if data_path else 100
    return Settings(
        data_path=data_path,
        eval_size=_positive_int(options, "eval_size", default_eval),
        train_size=_positive_int(options, "train_size", 100),
        max_steps=_positive_int(options, "max_steps", DEFAULT_MAX_STEPS, cap=50),
        search_backend=_check_search_backend(options.get("search_backend", "bm25")),
        top_k=_positive_int(options, "top_k", DEFAULT_TOP_K, cap=20),
        judge=_check_judge(options.get("judge", "rule")),
        replay=_path(options, "replay", must="dir"),
    )


def _fileparams_digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


class DeepSearchQATask:
    """Multi-hop question answering with search: accuracy judged per answer (L3)."""

    name = "deepsearchqa"
    version = "1"

    def prepare(self, ctx: TaskContext) -> PreparedTask:
        settings = parse_options(ctx.options)
        cache = Path(ctx.cache_dir)
        if settings.data_path is None:
            split_dir, split = self._offline(cache, settings), OFFLINE_SPLIT
        else:
            split_dir, split = self._reference(cache, settings), REFERENCE_SPLIT
        meta = json.loads((split_dir / "meta.json").read_text(encoding="utf-8"))
        config: dict[str, Any] = {
            **EVALUATOR_CONFIG,
            "max_steps": settings.max_steps,
            "top_k": settings.top_k,
            "search_backend": settings.search_backend,
            "judge": settings.judge,
            "corpus_path": str(split_dir / "corpus.json"),
        }
        if settings.replay is not None:
            config["replay"] = str(settings.replay)
        return PreparedTask(
            train_files=(split_dir / "train.jsonl",),
            eval_path=split_dir / "eval.jsonl",
            description=describe(
                split=split, n_train=meta["n_train"], n_eval=meta["n_eval"], evaluator_config=config
            ),
            evaluator="rollout",
            evaluator_config=config,
            kit_dir=self._kit(cache, split_dir, settings),
            kit_requires=("rank-bm25",),
            split=split,
            metric="accuracy",
        )

    def _offline(self, cache: Path, settings: Settings) -> Path:
        names = ("corpus.json", "questions_train.json", "questions_eval.json")
        files = [DATA_DIR / n for n in names]
        params = {
            "source": "shipped",
            "files": _fileparams_digest(files),
            "eval_size": settings.eval_size,
            "train_size": settings.train_size,
        }

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

        return build_once(cache / f"{OFFLINE_SPLIT}-{params_digest(params)}", build)

    def _reference(self, cache: Path, settings: Settings) -> Path:
        from autorl_task_deepsearchqa import official

        assert settings.data_path is not None
        source = official.find_file(settings.data_path)
        params = {
            "source": "google/deepsearchqa",
            "file": _fileparams_digest([source]),
            "eval_size": settings.eval_size,
            "train_size": settings.train_size,
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

        return build_once(cache / f"{REFERENCE_SPLIT}-{params_digest(params)}", build)

    @staticmethod
    def _write(
        staging: Path, train: list[Question], evals: list[Question], params: dict[str, Any]
    ) -> None:
        write_questions_jsonl(staging / "train.jsonl", train)
        write_questions_jsonl(staging / "eval.jsonl", evals)
        meta = {**params, "n_train": len(train), "n_eval": len(evals)}
        (staging / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    @staticmethod
    def _kit(cache: Path, split_dir: Path, settings: Settings) -> Path:
        """``kit/``: ``autorl_kit.py``, the env modules, the corpus and the TRAIN questions."""
        kit_settings = {
            "max_steps": settings.max_steps,
            "top_k": settings.top_k,
            "history_window": HISTORY_WINDOW,
        }
        digest = hashlib.sha256()
        for name in (*ENV_MODULES, "kit.py"):
            digest.update((PACKAGE_DIR / name).read_bytes())
        digest.update(split_dir.name.encode() + json.dumps(kit_settings).encode())
        target = cache / f"kit-{digest.hexdigest()[:12]}"

        def build(staging: Path) -> None:
            package = staging / KIT_PACKAGE
            package.mkdir()
            (package / "__init__.py").write_text(
                '"""The DeepSearchQA environment (a copy of the grader\'s modules)."""\n',
                encoding="utf-8",
            )
            for name in ENV_MODULES:
                shutil.copyfile(PACKAGE_DIR / name, package / name)
            data = staging / KIT_DATA
            data.mkdir()
            shutil.copyfile(split_dir / "corpus.json", data / "corpus.json")
            write_json(data / "questions_train.json", load_questions(split_dir / "train.jsonl"))
            (data / "settings.json").write_text(json.dumps(kit_settings) + "\n", encoding="utf-8")
            shutil.copyfile(PACKAGE_DIR / "kit.py", staging / KIT_NAME)

        return build_once(target, build, marker=KIT_NAME)
