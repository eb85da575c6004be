"""The ``judge`` evaluator: generate answers, judge each against its reference, score the
length-controlled win rate.

1. Greedy answers from the checkpoint, batched (``autorl_hf.generation.Generator``), each prompt
   from the task's ``judge`` contract (``build_messages(instruction)``, loaded by the engine from
   the installed task package into ``EvalRequest.contract``, never from the agent's workspace)
   through the model's chat template. Rows: ``instruction``, ``reference``.
2. One pairwise judgment per example with AlpacaEval 2.0's prompt (:mod:`.prompt`), the model's
   side drawn per instruction as AlpacaEval does, through a driver backend (:mod:`.judging`:
   disk cache, optional cassette, call log in the work directory).
3. AlpacaEval's own win rates (:mod:`.lc`): the score is the length-controlled win rate.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from autorl_data.jsonl import read_jsonl
from autorl_llm.drivers.errors import DriverError

from autorl.types import EvalRequest, EvalResult
from autorl_evaluator_judge import prompt as judge_prompt
from autorl_evaluator_judge.contract import JUDGE
from autorl_evaluator_judge.judging import Judge, JudgeError
from autorl_evaluator_judge.lc import length_controlled_winrate
from autorl_evaluator_judge.options import Options, settings

MODEL_NAME = "model"
REFERENCE_NAME = "reference"


def read_examples(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Eval rows with ``instruction`` and ``reference``; errors name the file and line."""
    rows = read_jsonl(
        path,
        required=("instruction", "reference"),
        what="example",
        valid=lambda v: isinstance(v, str),
        limit=limit,
    )
    for number, row in enumerate(rows):
        row.setdefault("id", f"example-{number + 1}")
        row.setdefault("index", number)
    return rows


def judge_all(
    judge: Judge,
    requests: list[Any],
    ids: list[str],
    concurrency: int,
    progress: Any,
    offset: int,
    total: int,
) -> list[Any]:
    """Verdicts in order; the first failure cancels what has not started and is raised with
    how far the judging got (finished judgments stay in the cache)."""
    verdicts: list[Any] = [None] * len(requests)
    done = 0
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = {pool.submit(judge.ask, r): i for i, r in enumerate(requests)}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
            failed = sorted((futures[f] for f in finished if f.exception() is not None), key=int)
            for future in finished:
                if future.exception() is None:
                    verdicts[futures[future]] = future.result()
                    done += 1
                    if progress is not None:
                        progress(offset + done, total)
            if failed:
                for other in pending:
                    other.cancel()
                wait(pending)
                first = next(f for f in finished if futures[f] == failed[0])
                exc = first.exception()
                error = _judge_failure(judge, ids[failed[0]], exc, verdicts)
                if error is exc:
                    raise exc
                raise error from exc
    return verdicts


def _judge_failure(
    judge: Judge, example: str, exc: BaseException, verdicts: list[Any]
) -> Exception:
    if not isinstance(exc, DriverError):
        return exc
    finished = sum(v is not None for v in verdicts)
    where = f" in {judge.cache.path}" if judge.cache.path else ""
    return JudgeError(
        f"judge {judge.name} failed on example {example!r} ({finished} of {len(verdicts)} "
        f"judged; their answers are kept{where}, so scoring again resumes there): "
        f"{exc.message if hasattr(exc, 'message') else exc}",
        hint=getattr(exc, "hint", None)
        or "check the judge's key, quota and network, or raise judge_options.timeout_s",
    )


def annotate(
    examples: list[dict[str, Any]],
    completions: list[Any],
    switched: list[bool],
    verdicts: list[Any],
    judge_name: str,
    details_path: Path,
) -> list[dict[str, Any]]:
    """AlpacaEval annotations (reference = ``output_1``, model = ``output_2``) from the verdicts,
    and one line of ``details.jsonl`` per example."""
    annotations = []
    with details_path.open("w", encoding="utf-8") as fh:
        for example, completion, switch, verdict in zip(
            examples, completions, switched, verdicts, strict=True
        ):
            pref = judge_prompt.preference(judge_prompt.parse_answer(verdict.text), switch)
            output = completion.text.strip()
            annotations.append(
                {
                    "instruction": example["instruction"],
                    "output_1": str(example["reference"]),
                    "output_2": output,
                    "generator_1": REFERENCE_NAME,
                    "generator_2": MODEL_NAME,
                    "annotator": judge_name,
                    "preference": pref,
                    "index": int(example["index"]),
                }
            )
            record = {
                "id": example["id"],
                "instruction": example["instruction"],
                "output": output,
                "reference": example["reference"],
                "model_shown_first": switch,
                "judge_answer": verdict.text,
                "preference": None if pref != pref else pref,
                "judge_cached": verdict.cached,
                "finish": completion.finish,
                "tokens": completion.tokens,
            }
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return annotations


class JudgeEvaluator:
    """Length-controlled win rate (percent) of the model's answers against the references."""

    Options = Options
    """Its options model: a campaign checks them before any run starts."""

    name = "judge"

    def check_config(self, config: Any, contract: Any = None) -> None:
        """Refuse bad options before any work (the engine and TaskConformance call it)."""
        settings(config)

    def evaluate(self, request: EvalRequest) -> EvalResult:
        cfg = settings(request.config)
        protocol = JUDGE.of(request, self.name)
        template = judge_prompt.load_template(cfg["annotator"])
        examples = read_examples(request.eval_path, cfg["limit"])
        work_dir = Path(request.work_dir)
        work_dir.mkdir(parents=True, exist_ok=True)
        judge = Judge(cfg, work_dir)  # before generating: a bad judge fails fast
        n = len(examples)
        total = 2 * n

        from autorl_hf.generation import Generator

        started = time.monotonic()
        generator = Generator(
            request.model_dir, device=cfg["device"], base_dir=request.base_model_dir
        )
        loaded = time.monotonic()
        prompts = [protocol.build_messages(str(e["instruction"])) for e in examples]
        completions = generator.completions(
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            batch_size=cfg["batch_size"],
            temperature=float(cfg["temperature"]),
            seed=request.seed,
            progress=(lambda d, _t: request.progress(d, total)) if request.progress else None,
        )
        generated = time.monotonic()
        engine = generator.engine  # name, version, precision (and why auto fell back)
        generator.close()  # the engine is handed back, idle, before the judge's calls (engine.pool)

        switched = [judge_prompt.is_switched(e["instruction"], cfg["side_seed"]) for e in examples]
        requests = []
        for example, completion, switch in zip(examples, completions, switched, strict=True):
            model, reference = completion.text.strip(), str(example["reference"])
            first, second = (model, reference) if switch else (reference, model)
            messages = judge_prompt.judge_messages(template, example["instruction"], first, second)
            requests.append(judge.request(messages, str(example["id"])))
        verdicts = judge_all(
            judge,
            requests,
            [str(e["id"]) for e in examples],
            cfg["concurrency"],
            request.progress,
            n,
            total,
        )
        judged = time.monotonic()

        details_path = work_dir / "details.jsonl"
        annotations = annotate(examples, completions, switched, verdicts, judge.name, details_path)
        rates = length_controlled_winrate(
            annotations,
            glm=cfg["glm"],
            glm_data_dir=Path(cfg["glm_data_dir"]) if cfg["glm_data_dir"] else None,
            work_dir=work_dir / "glm",
        )
        unparsed = sum(1 for a in annotations if a["preference"] != a["preference"])
        metrics: dict[str, Any] = {
            "lc_win_rate": rates["length_controlled_winrate"],
            "lc_standard_error": rates["lc_standard_error"],
            "score_se": rates["lc_standard_error"],  # the score's SE, under the common name
            "win_rate": rates["win_rate"],
            "standard_error": rates["standard_error"],
            "discrete_win_rate": rates["discrete_win_rate"],
            "n_wins": rates["n_wins"],
            "n_wins_base": rates["n_wins_base"],
            "n_draws": rates["n_draws"],
            "n_judged": n - unparsed,
            "n_unparsed": unparsed,
            "glm": rates["glm"],
            "lc_extreme_change": rates["lc_extreme_change"],
            "lc_fallback": rates["lc_fallback"],
            "annotator": template.annotator,
            **judge.metrics(),
            "mean_output_chars": round(sum(len(a["output_2"]) for a in annotations) / n, 1),
            "mean_reference_chars": round(sum(len(a["output_1"]) for a in annotations) / n, 1),
            "truncated_rate": round(sum(c.finish == "length" for c in completions) / n, 4),
            "backend": generator.backend,
            "engine": engine,
            "load_seconds": round(loaded - started, 2),
            "generate_seconds": round(generated - loaded, 2),
            "judge_seconds": round(judged - generated, 2),
        }
        return EvalResult(
            score=float(rates["length_controlled_winrate"]),
            n=n,
            metrics=metrics,
            details_path=details_path,
        )


__all__ = ["JudgeError", "JudgeEvaluator", "read_examples"]
