"""Route attribution: which training methods produced a submission, with the evidence.

Three kinds of evidence, strongest first (docs/analysis.md#routes):

1. **Training logs** the agent's processes printed (``agent.log``, tool outputs in the
   trajectory): the metric names trainers log are method-specific (TRL's GRPO logs
   ``completions/mean_length`` and ``reward_std``, DPO ``rewards/chosen``, SFT
   ``mean_token_accuracy``), as are ``<method>: N steps`` progress lines with N > 0. Only what
   was printed *before* the submission's checkpoint path first appears counts for it.
2. **Commands** the agent ran (the launch argv from ``events.jsonl``, shell tool calls in the
   trajectory): a ``--no-<method>`` / ``--skip-<method>`` flag removes that method.
3. **Code** in the submission's snapshot (``code-history.git`` at its ``code_revision``):
   trainer classes and losses used (``SFTTrainer``, ``GRPOTrainer``, ``DPOTrainer``...).

Logs win when they name any method; code (less the disabled methods) is the fallback. All
three are text the agent wrote, so a trained route is ``claimed``; only ``copy`` (the
harness's weight hash) is ``observed`` (docs/analysis.md#claims-and-observations).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from autorl_analysis.model import Evidence, Route, RouteLabel

FAMILY: dict[str, str] = {
    "sft": "sft",
    "dpo": "preference",
    "ipo": "preference",
    "orpo": "preference",
    "kto": "preference",
    "cpo": "preference",
    "simpo": "preference",
    "grpo": "online_rl",
    "ppo": "online_rl",
    "rloo": "online_rl",
    "reinforce": "online_rl",
    "online_dpo": "online_rl",
}
"""Method -> route family."""

Patterns = tuple[tuple[str, re.Pattern[str]], ...]


def named_patterns(*rows: tuple[str, str], flags: int = 0) -> Patterns:
    """``(name, regex)`` rows compiled, in order: a table's order is its match priority."""
    return tuple((name, re.compile(pattern, flags)) for name, pattern in rows)


CODE_PATTERNS = named_patterns(
    ("sft", r"\bSFT(?:Trainer|Config)\b|DataCollatorForCompletionOnlyLM|\bSeq2SeqTrainer\b"),
    ("dpo", r"\bDPO(?:Trainer|Config)\b|\bdpo_loss\b"),
    ("orpo", r"\bORPO(?:Trainer|Config)\b"),
    ("kto", r"\bKTO(?:Trainer|Config)\b"),
    ("cpo", r"\bCPO(?:Trainer|Config)\b"),
    ("online_dpo", r"\bOnlineDPO(?:Trainer|Config)\b"),
    ("grpo", r"\bGRPO(?:Trainer|Config)\b"),
    ("ppo", r"\bPPO(?:Trainer|Config)\b"),
    ("rloo", r"\bRLOO(?:Trainer|Config)\b"),
    ("reinforce", r"\bREINFORCE\b|\bpolicy_gradient_loss\b"),
)
"""Trainer classes and loss names in code; a line can name several."""

LOG_PATTERNS = named_patterns(
    ("dpo", r"['\"](?:rewards/chosen|rewards/margins|logps/chosen)['\"]"),
    ("ppo", r"['\"](?:objective/kl|objective/rlhf_reward|policy/approxkl_avg)['\"]"),
    ("grpo", r"['\"](?:completions/mean_length|reward_std|frac_reward_zero_std)['\"]"),
    ("sft", r"['\"]mean_token_accuracy['\"]"),
)
"""Metric names trainers log (TRL's log dicts); checked in this order, first match wins a line
(DPO also logs ``mean_token_accuracy``)."""

STEPS_RE = re.compile(
    r"\b(sft|dpo|orpo|kto|grpo|ppo|rloo|reinforce)\b\s*:\s*([1-9]\d*) (?:training )?steps\b",
    re.IGNORECASE,
)
"""A progress line such as ``grpo: 3 steps in 12s`` (0 steps is not training)."""
DISABLE_RE = re.compile(
    r"--(?:no|skip|without|disable)[-_](sft|dpo|orpo|kto|grpo|ppo|rloo)\b", re.IGNORECASE
)
CODE_SUFFIXES = (".py", ".sh", ".yaml", ".yml", ".toml", ".json", ".cfg")
MAX_EVIDENCE = 4
"""Evidence items kept per method and kind (the first ones)."""


@dataclass(frozen=True)
class Line:
    """One line of a text stream (a log, a trajectory), with where it came from."""

    source: str
    number: int
    text: str


def family_label(methods: Iterable[str]) -> RouteLabel:
    families = {FAMILY.get(m, "online_rl") for m in methods}
    if not families:
        return "none"
    if len(families) > 1:
        return "mixed"
    return families.pop()  # type: ignore[return-value]


def scan_code(files: Iterable[tuple[str, str]]) -> dict[str, list[Evidence]]:
    """Methods in code: ``files`` is ``(source, text)``; returns method -> evidence lines."""
    found: dict[str, list[Evidence]] = {}
    for source, text in files:
        if not source.endswith(CODE_SUFFIXES):
            continue
        names = python_names(text) if source.endswith(".py") else None
        for number, line in enumerate(text.splitlines(), 1):
            if len(line) > 2000 or line.lstrip().startswith("#"):
                continue
            code = names.get(number, "") if names is not None else line
            for method, pattern in CODE_PATTERNS:
                if pattern.search(code):
                    hits = found.setdefault(method, [])
                    if len(hits) < MAX_EVIDENCE:
                        hits.append(Evidence(source, line.strip()[:200], number))
    return found


def python_names(text: str) -> dict[int, str] | None:
    """Line -> the identifiers on it, without strings and comments (a docstring that names a
    trainer is not a use of it); None when the text does not tokenize (then lines are used)."""
    names: dict[int, list[str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                names.setdefault(tok.start[0], []).append(tok.string)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    return {line: " ".join(words) for line, words in names.items()}


def scan_log(lines: Iterable[Line]) -> list[tuple[int, str, Evidence]]:
    """Training evidence in a stream: ``(index in the stream, method, evidence)``."""
    hits = []
    for index, line in enumerate(lines):
        text = line.text
        if len(text) > 20_000:
            text = text[:20_000]
        step = STEPS_RE.search(text)
        method = step.group(1).lower() if step else None
        if method is None:
            method = next((m for m, p in LOG_PATTERNS if p.search(text)), None)
        if method is not None:
            hits.append((index, method, Evidence(line.source, text.strip()[:200], line.number)))
    return hits


def disabled_methods(commands: Iterable[Line]) -> dict[str, Evidence]:
    """Methods a command switched off (``--no-grpo``), with the command."""
    off: dict[str, Evidence] = {}
    for line in commands:
        for match in DISABLE_RE.finditer(line.text):
            off.setdefault(
                match.group(1).lower(), Evidence(line.source, line.text[:300], line.number)
            )
    return off


def cut_index(lines: Sequence[Line], needle: str, start: int = 0) -> int | None:
    """Index of the first line from ``start`` that mentions ``needle`` (a checkpoint path)."""
    if not needle:
        return None
    for index in range(start, len(lines)):
        if needle in lines[index].text:
            return index
    return None


def attribute(
    *,
    executed: Sequence[tuple[str, Evidence]],
    code: dict[str, list[Evidence]],
    disabled: dict[str, Evidence],
    copy: Evidence | None = None,
) -> Route:
    """A route from the evidence: ``executed`` (training-log hits, in order), ``code``
    (methods in the snapshot), ``disabled`` (methods a command turned off)."""
    if copy is not None:
        return Route("copy", (), (copy,), "observed")
    if executed:
        methods: list[str] = []
        evidence: list[Evidence] = []
        per_method: dict[str, int] = {}
        for method, ev in executed:
            if method not in methods:
                methods.append(method)
            if per_method.get(method, 0) < MAX_EVIDENCE:
                per_method[method] = per_method.get(method, 0) + 1
                evidence.append(ev)
        for method in methods:
            evidence += code.get(method, [])[:1]
        return Route(family_label(methods), tuple(methods), tuple(evidence))
    methods = [m for m in _ordered(code) if m not in disabled]
    evidence = [ev for m in methods for ev in code[m][:MAX_EVIDENCE]]
    evidence += [disabled[m] for m in code if m in disabled]
    if not code:
        return Route("none", (), ())
    return Route(family_label(methods), tuple(methods), tuple(evidence))


def _ordered(code: dict[str, list[Evidence]]) -> list[str]:
    order = [m for m, _ in CODE_PATTERNS]
    return sorted(code, key=order.index)
