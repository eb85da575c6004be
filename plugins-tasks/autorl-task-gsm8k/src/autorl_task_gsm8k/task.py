"""The ``gsm8k`` task: prepares the splits into the task cache, the kit and the description."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl.types import PreparedTask, TaskContext
from autorl_task_gsm8k import data
from autorl_task_gsm8k.description import describe

KIT_SOURCE = Path(__file__).with_name("kit.py")
KIT_NAME = "autorl_kit.py"
PROTOCOL_MODULE = "autorl_task_gsm8k.kit"
"""What the evaluator imports for the prompt and answer extraction (never the workspace copy)."""

OFFLINE_SPLIT = "offline-gsm-symbolic"
REFERENCE_SPLIT = "gsm8k-reference"
GENERATOR_VERSION = 1
"""Bump when the offline generation changes, so cached splits are rebuilt."""

EVALUATOR_CONFIG: dict[str, Any] = {
    "protocol": PROTOCOL_MODULE,
    "max_new_tokens": 192,
    "batch_size": 16,
    "temperature": 0.0,
}
"""Greedy decoding; 192 new tokens covers ~99 % of gsm_symbolic solutions (max ~220 tokens)."""

OPTIONS = {
    "train_size": "number of train examples (offline default 1000; reference: all 7,473)",
    "eval_size": "number of eval examples (offline default 50; reference: all 1,319)",
    "source": "'offline' (default), 'local' (needs data_path) or 'hub' (openai/gsm8k, online)",
    "data_path": "directory with the real GSM8K: train.jsonl/test.jsonl or the hub's parquet",
    "split_seed": "seed of the offline generation (default 1234; the same for every run)",
}


@dataclass(frozen=True)
class Settings:
    source: str
    train_size: int | None
    eval_size: int | None
    data_path: Path | None
    split_seed: int


def _positive_int(options: Mapping[str, Any], key: str) -> int | None:
    value = options.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"task option {key}={value!r}: must be a positive integer",
            hint=f"set [task_options] {key} = 100 (for example)",
        )
    return value


def parse_options(options: Mapping[str, Any]) -> Settings:
    """Validate ``[task_options]``: unknown keys and bad values are errors, not silent defaults."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        listed = "; ".join(f"{k}: {v}" for k, v in OPTIONS.items())
        raise ConfigError(
            f"gsm8k: unknown task option(s) {', '.join(map(repr, unknown))}",
            hint=f"known options: {listed}",
        )
    data_path = options.get("data_path")
    source = options.get("source") or ("local" if data_path else "offline")
    if source not in ("offline", "local", "hub"):
        raise ConfigError(
            f"task option source={source!r}: must be 'offline', 'local' or 'hub'",
            hint="'local' reads data_path, 'hub' downloads openai/gsm8k, 'offline' generates",
        )
    if source == "local" and not data_path:
        raise ConfigError(
            "task option source='local' needs data_path",
            hint="set [task_options] data_path = '/path/to/gsm8k' (train.jsonl + test.jsonl)",
        )
    seed = options.get("split_seed", 1234)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"task option split_seed={seed!r}: must be an integer")
    return Settings(
        source=source,
        train_size=_positive_int(options, "train_size"),
        eval_size=_positive_int(options, "eval_size"),
        data_path=Path(data_path).expanduser().resolve() if data_path else None,
        split_seed=seed,
    )


def _digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _files_digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path).encode() + b"\0")
        with path.open("rb") as fh:
            for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:16]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def build_once(target: Path, build: Callable[[Path], None], marker: str = "meta.json") -> Path:
    """Run ``build(staging_dir)`` unless ``target`` is complete, then move it into place.

    ``marker`` is written last, so its presence marks a finished build; a crash leaves only a
    staging directory, never a half-written split.
    """
    if (target / marker).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        build(staging)
        if target.exists():  # an incomplete earlier build
            shutil.rmtree(target)
        try:
            os.rename(staging, target)
        except OSError:  # another process finished first: its files are identical
            if not (target / marker).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def trim(rows: list[data.Example], size: int | None) -> list[data.Example]:
    return rows if size is None else rows[:size]


class GSM8KTask:
    """Grade-school math word problems; exact match of the final number (L1, rule-based)."""

    name = "gsm8k"
    version = "1"

    def prepare(self, ctx: TaskContext) -> PreparedTask:
        settings = parse_options(ctx.options)
        cache = Path(ctx.cache_dir)
        if settings.source == "offline":
            split_dir, split_name = self._offline(cache, settings)
        else:
            split_dir, split_name = self._reference(cache, settings)
        meta = json.loads((split_dir / "meta.json").read_text(encoding="utf-8"))
        return PreparedTask(
            train_files=(split_dir / "train.jsonl",),
            eval_path=split_dir / "eval.jsonl",
            description=describe(
                split=split_name,
                n_train=meta["n_train"],
                n_eval=meta["n_eval"],
                evaluator_config=EVALUATOR_CONFIG,
            ),
            evaluator="exact",
            evaluator_config=dict(EVALUATOR_CONFIG),
            kit_dir=self._kit(cache),
            split=split_name,
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

        return build_once(cache / f"{OFFLINE_SPLIT}-{_digest(params)}", build), OFFLINE_SPLIT

    def _reference(self, cache: Path, settings: Settings) -> tuple[Path, str]:
        params: dict[str, Any] = {
            "source": settings.source,
            "train_size": settings.train_size,
            "eval_size": settings.eval_size,
        }
        if settings.source == "local":
            assert settings.data_path is not None
            files = data.reference_files(settings.data_path)
            params["files"] = _files_digest(files["train"] + files["test"])

        def build(staging: Path) -> None:
            if settings.source == "local":
                assert settings.data_path is not None
                train, test = data.local_reference(settings.data_path)
            else:
                train, test = data.hub_reference()
            test = trim(test, settings.eval_size)
            taken = {data.normalize_question(e["question"]) for e in test}
            kept = [e for e in train if data.normalize_question(e["question"]) not in taken]
            self._write(
                staging,
                trim(kept, settings.train_size),
                test,
                {**params, "dropped_train_duplicates": len(train) - len(kept)},
            )

        name = REFERENCE_SPLIT
        if settings.train_size or settings.eval_size:
            name += f"-subset-{settings.train_size or 'all'}-{settings.eval_size or 'all'}"
        return build_once(cache / f"{REFERENCE_SPLIT}-{_digest(params)}", build), name

    @staticmethod
    def _write(
        staging: Path, train: list[data.Example], evals: list[data.Example], params: dict
    ) -> None:
        write_jsonl(staging / "train.jsonl", train)
        write_jsonl(staging / "eval.jsonl", evals)
        meta = {**params, "n_train": len(train), "n_eval": len(evals)}
        (staging / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    @staticmethod
    def _kit(cache: Path) -> Path:
        """``kit/autorl_kit.py``: a verbatim copy of :mod:`autorl_task_gsm8k.kit`."""
        source = KIT_SOURCE.read_bytes()
        target = cache / f"kit-{hashlib.sha256(source).hexdigest()[:12]}"

        def build(staging: Path) -> None:
            (staging / KIT_NAME).write_bytes(source)

        build_once(target, build, marker=KIT_NAME)
        return target
