"""The ``judge`` evaluator's options: defaults, validation, one error per mistake."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError

DEFAULTS: dict[str, Any] = {
    "protocol": "autorl_task_alpacaeval.kit",
    "judge": None,
    "judge_options": {},
    "annotator": "weighted_alpaca_eval_gpt4_turbo",
    "judge_max_tokens": 1,
    "judge_temperature": None,
    "stream": False,
    "concurrency": 4,
    "cassette": None,
    "cassette_mode": "record",
    "cache": True,
    "cache_dir": None,
    "side_seed": 123,
    "glm": "length_controlled_minimal",
    "glm_data_dir": None,
    "scripts_dir": None,
    "max_new_tokens": 256,
    "batch_size": 8,
    "temperature": 0.0,
    "device": "auto",
    "limit": None,
}
"""Meaning of each option: docs/evaluators/judge.md."""

CASSETTE_MODES = ("record", "replay", "auto")
GLMS = ("length_controlled_v1", "length_controlled_minimal", "length_controlled_noreg")


def _fail(key: str, value: Any, need: str, hint: str | None = None) -> ConfigError:
    return ConfigError(f"evaluator 'judge': {key}={value!r} {need}", hint=hint)


def _positive_int(cfg: dict[str, Any], key: str) -> None:
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(key, value, "must be a positive integer")


def settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults overlaid with ``config``; unknown keys and bad values are errors."""
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ConfigError(
            f"evaluator 'judge': unknown option(s) {', '.join(map(repr, unknown))}",
            hint=f"known options: {', '.join(DEFAULTS)}",
        )
    cfg = {**DEFAULTS, **config}
    judge = cfg["judge"]
    if not isinstance(judge, str) or "/" not in judge.strip().strip("/"):
        raise _fail(
            "judge",
            judge,
            "is not a driver name <backend>/<model>",
            "for example openai/gpt-4.1, anthropic/claude-sonnet-4-6 or "
            "scripted/alpacaeval_judge_v1.yaml",
        )
    cfg["judge"] = judge.strip()
    if not isinstance(cfg["judge_options"], Mapping):
        raise _fail("judge_options", cfg["judge_options"], "must be a table of driver options")
    for key in ("judge_max_tokens", "concurrency", "max_new_tokens", "batch_size"):
        _positive_int(cfg, key)
    if cfg["limit"] is not None:
        _positive_int(cfg, "limit")
    for key in ("judge_temperature", "temperature"):
        value = cfg[key]
        if key == "judge_temperature" and value is None:
            continue  # not sent: the provider's default
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 2:
            raise _fail(key, value, "must be a number in [0, 2]")
    for key in ("stream", "cache"):
        if not isinstance(cfg[key], bool):
            raise _fail(key, cfg[key], "must be true or false")
    if isinstance(cfg["side_seed"], bool) or not isinstance(cfg["side_seed"], int):
        raise _fail("side_seed", cfg["side_seed"], "must be an integer")
    if cfg["cassette_mode"] not in CASSETTE_MODES:
        raise _fail("cassette_mode", cfg["cassette_mode"], f"is not one of {CASSETTE_MODES}")
    if cfg["cassette"] is not None and not isinstance(cfg["cassette"], str | Path):
        raise _fail("cassette", cfg["cassette"], "must be a file path")
    if cfg["cassette_mode"] == "replay" and cfg["cassette"] is None:
        raise _fail(
            "cassette_mode",
            "replay",
            "needs a cassette",
            "set cassette = 'path/to/judge-cassette.jsonl' (recorded with cassette_mode 'record')",
        )
    if cfg["glm"] not in GLMS:
        raise _fail("glm", cfg["glm"], f"is not one of {GLMS}")
    for key in ("cache_dir", "glm_data_dir", "scripts_dir"):
        if cfg[key] is not None and not isinstance(cfg[key], str | Path):
            raise _fail(key, cfg[key], "must be a directory path")
    if not isinstance(cfg["protocol"], str) or not cfg["protocol"]:
        raise _fail("protocol", cfg["protocol"], "must name a module with build_messages()")
    return cfg
