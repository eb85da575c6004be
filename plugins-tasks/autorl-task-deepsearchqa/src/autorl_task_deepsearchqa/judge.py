"""Grading answers: the rule judge (offline default) or an LLM judge through ``autorl_llm.drivers``.

Two LLM judge styles: ``chat`` (ours, below) and ``reference`` (task option ``prompt =
"reference"``): RD-Agent's ``_judge_answer`` (``benchmarks/deepsearchqa/eval.py``, commit
471eb30), with its user prompt :data:`REFERENCE_JUDGE_PROMPT`, its system message, RD-Agent's
default chat temperature (0.5) and no token limit, its reading (the reply's first line, stripped
of punctuation, lower-cased, equals ``correct``) and its string-match fallback when the call fails
or the reply is empty (:func:`reference_string_match`).

The LLM judge (task option ``judge = "<backend>/<model>"``, e.g. ``openai/gpt-4o-mini`` or
``scripted/judge.yaml``) gets :data:`JUDGE_PROMPT` (question, gold answer, response; for set
answers it is told the response must contain every gold item) and must reply CORRECT or
INCORRECT. Verdicts are cached on disk by (judge model, prompt hash) in
``<records_dir>/judge_cache.jsonl`` so scoring the same answer again makes no call, and every
call is recorded in an ``autorl_llm.drivers`` cassette (``<records_dir>/judge_cassette.jsonl``) so a
judged score replays offline (``replay`` option: cassette mode ``replay``, no key, no network).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl_task_deepsearchqa.corpus import Question
from autorl_task_deepsearchqa.env import rule_grade
from autorl_task_deepsearchqa.env_reference import answer_type, gold_answer

RULE_JUDGE = "rule"
CACHE_FILE = "judge_cache.jsonl"
CASSETTE_FILE = "judge_cassette.jsonl"
VERDICT_RE = re.compile(r"\b(incorrect|correct)\b", re.IGNORECASE)

JUDGE_SYSTEM = "You grade answers to research questions against a gold answer. Be strict."
JUDGE_PROMPT = """Question: {question}
Gold answer: {gold}
{set_rule}Response: {response}

Does the response give the gold answer? Ignore case, articles and formatting. Reply with \
exactly one word: CORRECT or INCORRECT."""
SET_RULE = (
    "The gold answer is a set of {n} items. The response is correct only if it contains every "
    "item; missing any item makes it INCORRECT.\n"
)


REFERENCE_JUDGE_SYSTEM = "You are a strict answer evaluator."
REFERENCE_JUDGE_PROMPT = (
    "You are an answer evaluator. Compare the predicted answer to the gold answer.\n"
    "        Question answer type: {answer_type}\n"
    "        Gold answer: {gold}\n"
    "        Predicted answer: {predicted}\n"
    '        For "Single Answer": The predicted answer is correct if it contains the same key '
    "information as the gold answer.\n"
    '        For "Set Answer": The predicted answer is correct if it contains ALL items from the '
    "gold answer (order doesn't matter, minor wording variations are OK).\n"
    '        Reply with ONLY "correct" or "incorrect". No explanation.'
)
"""Verbatim, with the eight-space indentation its f-string in a method body carries."""
REFERENCE_JUDGE_TEMPERATURE = 0.5
"""RD-Agent's ``LLM_SETTINGS.chat_temperature`` default (its judge call sets none itself)."""
STYLES = ("chat", "reference")


def reference_judge_prompt(question: Question, predicted: str) -> str:
    """The reference's judge prompt: the data set's answer type and gold text, the prediction
    as the loop returned it."""
    return REFERENCE_JUDGE_PROMPT.format(
        answer_type=answer_type(question), gold=gold_answer(question), predicted=predicted
    )


def reference_verdict(text: str | None) -> bool:
    """The reference's reading; raises (IndexError, AttributeError) where it does, on an empty
    or missing reply, so the caller falls back to the string match as it does."""
    response = text.strip().lower()  # type: ignore[union-attr]
    return response.splitlines()[0].strip().strip(".!,;: \t\r\n").lower() == "correct"


def reference_string_match(predicted: str, gold: str, answer_type: str) -> bool:
    """The reference's fallback: single, gold in prediction or prediction in gold; otherwise
    every comma-separated gold item in the prediction (all lower-cased and stripped)."""
    pred, gold = predicted.strip().lower(), gold.strip().lower()
    if answer_type == "Single Answer":
        return gold in pred or pred in gold
    return all(item.strip() in pred for item in gold.split(","))


def judge_prompt(question: Question, response: str) -> str:
    set_rule = SET_RULE.format(n=len(question.answer)) if question.answer_type == "set" else ""
    return JUDGE_PROMPT.format(
        question=question.question,
        gold=question.gold_text,
        set_rule=set_rule,
        response=response.strip(),
    )


def parse_verdict(text: str) -> bool | None:
    """CORRECT -> True, INCORRECT -> False, anything else -> None (counted as incorrect)."""
    match = VERDICT_RE.search(text or "")
    return None if match is None else match.group(1).lower() == "correct"


class LLMJudge:
    """A driver-backed judge with an on-disk verdict cache and a cassette of its calls."""

    def __init__(
        self,
        judge: str,
        records_dir: str | Path,
        *,
        replay_dir: str | Path | None = None,
        registry: Any | None = None,
        max_tokens: int = 8,
        options: dict[str, Any] | None = None,
        style: str = "chat",
    ) -> None:
        from autorl_llm.drivers import open_driver, parse_driver_name

        if style not in STYLES:
            raise ValueError(f"judge style {style!r} is not one of {', '.join(STYLES)}")
        parse_driver_name(judge)
        self.judge = judge
        self.style = style
        self.system = REFERENCE_JUDGE_SYSTEM if style == "reference" else JUDGE_SYSTEM
        self.max_tokens: int | None = None if style == "reference" else max_tokens
        self.temperature = REFERENCE_JUDGE_TEMPERATURE if style == "reference" else 0.0
        self.replaying = replay_dir is not None
        self.records_dir = Path(records_dir)
        self._lock = threading.Lock()
        self._cache: dict[str, dict[str, Any]] = {}
        self.calls = 0
        if self.replaying:
            tape = Path(replay_dir) / CASSETTE_FILE  # type: ignore[arg-type]
            if not tape.is_file():
                raise ConfigError(
                    f"deepsearchqa: replay has no judge cassette {tape}",
                    hint="replay the records directory of an evaluation that used this judge",
                )
            self.driver = open_driver(judge, cassette=tape, cassette_mode="replay")
        else:
            self.records_dir.mkdir(parents=True, exist_ok=True)
            self._load_cache()
            self.driver = open_driver(
                judge,
                registry=registry,
                cassette=self.records_dir / CASSETTE_FILE,
                cassette_mode="record",
                **(options or {}),
            )

    @property
    def cache_path(self) -> Path:
        return self.records_dir / CACHE_FILE

    def _load_cache(self) -> None:
        if not self.cache_path.is_file():
            return
        for line in self.cache_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                self._cache[row["key"]] = row

    def key(self, prompt: str) -> str:
        return hashlib.sha256(f"{self.judge}\0{self.system}\0{prompt}".encode()).hexdigest()[:32]

    def prompt(self, question: Question, response: str) -> str:
        if self.style == "reference":
            return reference_judge_prompt(question, response)
        return judge_prompt(question, response)

    def _read(
        self, question: Question, response: str, text: str | None
    ) -> tuple[bool | None, bool]:
        """(verdict, fell back to the string match)."""
        if self.style != "reference":
            return parse_verdict(text or ""), False
        try:
            return reference_verdict(text), False
        except (AttributeError, IndexError):
            return self._string_match(question, response), True

    @staticmethod
    def _string_match(question: Question, response: str) -> bool:
        return reference_string_match(response, gold_answer(question), answer_type(question))

    def grade(self, question: Question, response: str) -> dict[str, Any]:
        prompt = self.prompt(question, response)
        key = self.key(prompt)
        with self._lock:
            cached = None if self.replaying else self._cache.get(key)
        if cached is not None:
            return {
                "correct": bool(cached["correct"]),
                "judge": self.judge,
                "cached": True,
                "input_tokens": 0,
                "output_tokens": 0,
                "cost_usd": 0.0,
                "parse_error": cached["verdict"] is None,
                "fallback": bool(cached.get("fallback", False)),
            }
        try:
            reply = self.driver.complete(
                [{"role": "user", "content": prompt}],
                system=self.system,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
            )
        except Exception as exc:
            from autorl_llm.drivers.errors import CassetteMissError

            if self.style != "reference" or isinstance(exc, CassetteMissError):
                raise
            # the reference falls back to its string match on any failed call (not cached)
            return self._fallback(question, response, f"{type(exc).__name__}: {exc}")
        verdict, fallback = self._read(question, response, reply.text)
        row = {
            "key": key,
            "judge": self.judge,
            "verdict": verdict,
            "correct": bool(verdict),
            "text": reply.text,
            "fallback": fallback,
        }
        with self._lock:
            self.calls += 1
            if not self.replaying and key not in self._cache:
                self._cache[key] = row
                with self.cache_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        return {
            "correct": bool(verdict),
            "judge": self.judge,
            "cached": False,
            "input_tokens": reply.usage.input_tokens,
            "output_tokens": reply.usage.output_tokens,
            "cost_usd": float(reply.cost_usd or 0.0),
            "parse_error": verdict is None,
            "fallback": fallback,
        }

    def _fallback(self, question: Question, response: str, error: str) -> dict[str, Any]:
        with self._lock:
            self.calls += 1
        return {
            "correct": self._string_match(question, response),
            "judge": self.judge,
            "cached": False,
            "input_tokens": 0,
            "output_tokens": 0,
            "cost_usd": 0.0,
            "parse_error": False,
            "fallback": True,
            "error": error,
        }


def rule_judge(question: Question, response: str) -> dict[str, Any]:
    """The offline judge with the same info fields as the LLM judge (no tokens, no cost)."""
    return {
        **rule_grade(question, response),
        "cached": False,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "parse_error": False,
    }
