"""The ``exact`` evaluator: greedy generation, final-answer extraction, exact match.

The prompt format and the answer extraction come from a *protocol module* named by the task in
``evaluator_config["protocol"]`` (default ``autorl_task_gsm8k.kit``) and imported from the
installed package, never from the agent's workspace. A protocol module provides
``build_messages(question) -> list[dict]``, ``extract_answer(text) -> str | None``,
``normalize_number(text) -> str | None`` and ``has_final_answer_line(text) -> bool``.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from autorl.datafiles import read_jsonl
from autorl.errors import ConfigError
from autorl.types import EvalRequest, EvalResult

DEFAULT_PROTOCOL = "autorl_task_gsm8k.kit"
PROTOCOL_FUNCTIONS = (
    "build_messages",
    "extract_answer",
    "normalize_number",
    "has_final_answer_line",
)
DEFAULTS: dict[str, Any] = {
    "protocol": DEFAULT_PROTOCOL,
    "max_new_tokens": 192,
    "batch_size": 16,
    "temperature": 0.0,
    "device": "auto",
    "limit": None,
}
"""``limit``: score only the first N eval examples (quick checks; None = all)."""


def load_protocol(name: str) -> ModuleType:
    """Import the protocol module and check it has every function the evaluator calls."""
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(
            f"evaluator 'exact': cannot import protocol module {name!r} ({exc})",
            hint="install the task package that provides it (e.g. pip install autorl-task-gsm8k)"
            " or fix evaluator_config['protocol']",
        ) from None
    missing = [f for f in PROTOCOL_FUNCTIONS if not callable(getattr(module, f, None))]
    if missing:
        raise ConfigError(
            f"evaluator 'exact': protocol module {name!r} lacks {', '.join(missing)}",
            hint=f"a protocol module defines {', '.join(PROTOCOL_FUNCTIONS)}",
        )
    return module


def settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults overlaid with ``config``; unknown keys are errors (a typo must not pass)."""
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ConfigError(
            f"evaluator 'exact': unknown option(s) {', '.join(map(repr, unknown))}",
            hint=f"known options: {', '.join(DEFAULTS)}",
        )
    merged = {**DEFAULTS, **config}
    for key in ("max_new_tokens", "batch_size"):
        value = merged[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"evaluator 'exact': {key}={value!r} must be a positive integer")
    return merged


def read_examples(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Eval rows with ``question`` and ``answer``; errors name the file and the line."""
    rows = read_jsonl(path, required=("question", "answer"), what="example", limit=limit)
    for number, row in enumerate(rows, 1):
        row.setdefault("id", f"example-{number}")
    return rows


class ExactMatchEvaluator:
    """Percent of eval questions whose extracted final answer equals the gold answer."""

    name = "exact"

    def evaluate(self, request: EvalRequest) -> EvalResult:
        from autorl_hf.generation import Generator

        cfg = settings(request.config)
        protocol = load_protocol(cfg["protocol"])
        examples = read_examples(request.eval_path, cfg["limit"])
        prompts = [protocol.build_messages(str(e["question"])) for e in examples]

        started = time.monotonic()
        generator = Generator(request.model_dir, device=cfg["device"])
        loaded = time.monotonic()
        completions = generator.completions(
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            batch_size=cfg["batch_size"],
            temperature=float(cfg["temperature"]),
            seed=request.seed,
            progress=request.progress,
        )
        generated = time.monotonic()

        work_dir = Path(request.work_dir)
        work_dir.mkdir(parents=True, exist_ok=True)
        details_path = work_dir / "details.jsonl"
        correct = formatted = truncated = tokens = 0
        with details_path.open("w", encoding="utf-8") as fh:
            for example, completion in zip(examples, completions, strict=True):
                gold = protocol.normalize_number(str(example["answer"]))
                extracted = protocol.extract_answer(completion.text)
                ok = extracted is not None and extracted == gold
                has_format = bool(protocol.has_final_answer_line(completion.text))
                correct += ok
                formatted += has_format
                truncated += completion.finish == "length"
                tokens += completion.tokens
                record = {
                    "id": example["id"],
                    "output": completion.text,
                    "extracted": extracted,
                    "gold": gold,
                    "correct": ok,
                    "has_final_answer_line": has_format,
                    "finish": completion.finish,
                    "tokens": completion.tokens,
                }
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        n = len(examples)
        return EvalResult(
            score=100.0 * correct / n,
            n=n,
            metrics={
                "correct": correct,
                "n": n,
                "format_rate": round(formatted / n, 4),
                "truncated_rate": round(truncated / n, 4),
                "mean_output_tokens": round(tokens / n, 1),
                "backend": generator.backend,
                "load_seconds": round(loaded - started, 2),
                "generate_seconds": round(generated - loaded, 2),
            },
            details_path=details_path,
        )
