"""The ``exact`` evaluator: greedy generation, final-answer extraction, exact match.

It consumes the ``answer`` contract (:class:`autorl_evaluator_exact.contract.AnswerContract`):
the task's ``build_messages(question)`` makes the prompt, ``extract_answer(text)`` finds the
final answer in the output, ``normalize(answer)`` puts answers in one form; a prediction is
correct when ``normalize(extract_answer(output)) == normalize(row["answer"])``. The optional
``has_final_answer_line(text)`` gives the report's format rate. ``few_shot`` (worked examples,
``[{"question", "solution"}]``) puts each example before the question as an earlier exchange:
the contract's messages for its question, then its solution as the assistant's turn. The engine
loads the task's implementation from the installed package (never the agent's workspace) and
passes it in ``EvalRequest.contract``. Rows: ``question``, ``answer`` (an ``id`` is optional).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autorl_data.jsonl import read_jsonl
from pydantic import BaseModel, ConfigDict, Field

from autorl.options import OptionsModel, PositiveInt, parse_options
from autorl.types import EvalRequest, EvalResult
from autorl_evaluator_exact.contract import ANSWER


class Shot(BaseModel):
    """A worked example shown before each question."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1)
    solution: str = Field(min_length=1)


class Options(OptionsModel):
    """``[evaluator_options]`` of the exact evaluator (and what a task sets in its config)."""

    max_new_tokens: PositiveInt = Field(192, description="generated tokens per answer")
    batch_size: PositiveInt = Field(16, description="prompts generated together")
    temperature: float = Field(0.0, ge=0, description="0: greedy")
    device: str = Field("auto", description="auto, cpu or cuda")
    limit: PositiveInt | None = Field(None, description="score only the first N examples")
    few_shot: tuple[Shot, ...] = Field(
        (),
        description="worked examples ({question, solution}) shown before each question",
    )


def binomial_se(successes: int, n: int) -> float:
    """Standard error of a success rate in score points: what a campaign's noise floor and the
    report's error bars use (sqrt(p(1-p)/n), 0 for n = 0)."""
    if n <= 0:
        return 0.0
    p = successes / n
    return round(100.0 * math.sqrt(p * (1 - p) / n), 2)


def settings(config: dict[str, Any] | None) -> Options:
    return parse_options(Options, config, who="evaluator 'exact'")


def with_few_shot(contract: Any, shots: Sequence[Shot], question: str) -> list[dict[str, str]]:
    """The contract's messages for ``question`` after the worked examples: each example's own
    messages (a system message only once, first) and its solution as the assistant's turn."""
    messages: list[dict[str, str]] = []
    for shot in shots:
        turn = list(contract.build_messages(shot.question))
        if messages:
            turn = [m for m in turn if m.get("role") != "system"]
        messages += [*turn, {"role": "assistant", "content": shot.solution}]
    final = list(contract.build_messages(question))
    if messages:
        final = [m for m in final if m.get("role") != "system"]
    return [*messages, *final]


def read_examples(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Eval rows with ``question`` and ``answer``; errors name the file and the line."""
    rows = read_jsonl(path, required=("question", "answer"), what="example", limit=limit)
    for number, row in enumerate(rows, 1):
        row.setdefault("id", f"example-{number}")
    return rows


class ExactMatchEvaluator:
    """Percent of eval questions whose extracted final answer equals the gold answer."""

    Options = Options
    """Its options model: a campaign checks them before any run starts."""

    name = "exact"

    def check_config(self, config: dict[str, Any], contract: Any = None) -> None:
        """Refuse bad options before any work (the engine and TaskConformance call it)."""
        settings(dict(config))

    def evaluate(self, request: EvalRequest) -> EvalResult:
        from autorl_hf.generation import Generator

        cfg = settings(dict(request.config))
        contract = ANSWER.of(request, self.name)
        examples = read_examples(request.eval_path, cfg.limit)
        prompts = [with_few_shot(contract, cfg.few_shot, str(e["question"])) for e in examples]
        format_ok = getattr(contract, "has_final_answer_line", None)

        started = time.monotonic()
        generator = Generator(request.model_dir, device=cfg.device, base_dir=request.base_model_dir)
        loaded = time.monotonic()
        completions = generator.completions(
            prompts,
            max_new_tokens=cfg.max_new_tokens,
            batch_size=cfg.batch_size,
            temperature=cfg.temperature,
            seed=request.seed,
            progress=request.progress,
        )
        generated = time.monotonic()
        engine = generator.engine  # name, version, precision (and why auto fell back)
        generator.close()  # the engine is handed back now, idle for the same weights (engine.pool)

        work_dir = Path(request.work_dir)
        work_dir.mkdir(parents=True, exist_ok=True)
        details_path = work_dir / "details.jsonl"
        correct = formatted = truncated = tokens = 0
        with details_path.open("w", encoding="utf-8") as fh:
            for example, completion in zip(examples, completions, strict=True):
                gold = contract.normalize(str(example["answer"]))
                extracted = contract.extract_answer(completion.text)
                if extracted is not None:
                    extracted = contract.normalize(extracted)
                ok = extracted is not None and extracted == gold
                has_format = (
                    bool(format_ok(completion.text)) if format_ok else extracted is not None
                )
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
                "score_se": binomial_se(correct, n),
                "format_rate": round(formatted / n, 4),
                "truncated_rate": round(truncated / n, 4),
                "mean_output_tokens": round(tokens / n, 1),
                "backend": generator.backend,
                "engine": engine,
                "load_seconds": round(loaded - started, 2),
                "generate_seconds": round(generated - loaded, 2),
            },
            details_path=details_path,
        )
