"""Failure types of a run and of its submissions (docs/analysis.md#failures).

From the harness's records: the submissions log (the validator's and the evaluator's reasons),
``run.json`` (end reason, exit code, the sandbox's OOM kills) and the agent log / trajectory
(tracebacks of the agent's training processes, classified by their exception).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from autorl_analysis.model import Evidence, Failure
from autorl_analysis.routes import Line, named_patterns

REASON_CLASSES = named_patterns(
    ("missing_config", r"config\.json missing|no 'model_type'|adapter_config"),
    ("missing_weights", r"no weights|without weights|tensor .* is in both|index"),
    ("missing_tokenizer", r"tokenizer missing"),
    ("truncated", r"truncated|header"),
    ("too_large", r"checkpoint is .* limit|more than .* files|nests directories"),
    ("not_regular", r"not a regular file|links to|symlink|changed while"),
    ("merge", r"merge|LoRA|adapter"),
    ("intake", r"intake failed|stopped before this checkpoint"),
    ("unfinished", r"run ended before"),
    flags=re.IGNORECASE,
)
"""The validator's reason classes, from its message (first match)."""

CRASH_CLASSES = named_patterns(
    (
        "oom",
        r"OutOfMemoryError|CUDA out of memory|can't allocate memory|MemoryError|"
        r"Cannot allocate memory|std::bad_alloc",
    ),
    ("cuda", r"CUDA error|cuDNN error|NCCL error|CUBLAS_STATUS|no CUDA GPUs"),
    ("import", r"ModuleNotFoundError|ImportError|No module named"),
    ("shape", r"size mismatch|shape mismatch|shapes? .* (?:cannot|must) |Expected .* size"),
)
TRACEBACK = "Traceback (most recent call last)"
EXCEPTION_RE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt))\b[:\s]?(.*)$")


def reason_class(reason: str | None) -> str:
    text = reason or ""
    return next((name for name, p in REASON_CLASSES if p.search(text)), "other")


def submission_failure(s: Any, baseline: float | None) -> Failure | None:
    """Why one submission did not improve: it failed (invalid or the evaluator broke), or it
    scored below the baseline."""
    reason = s.reason or ""
    if s.status == "failed":
        ev = (Evidence("submissions.jsonl", f"submission {s.submission_id}: {reason}"[:300]),)
        if reason.startswith("evaluation failed"):
            return Failure("evaluator_error", reason.split(":")[1].strip()[:80], reason, ev)
        return Failure("invalid_checkpoint", reason_class(reason), reason, ev)
    if s.valid and s.score is not None and baseline is not None and s.score < baseline:
        return Failure(
            "regression",
            "",
            f"score {s.score:g} below the baseline {baseline:g}",
            (Evidence("submissions.jsonl", f"submission {s.submission_id}: score {s.score}"),),
        )
    return None


def crashes(lines: Sequence[Line]) -> list[Failure]:
    """Tracebacks in a stream, one failure per traceback, classified by its exception; the
    agent printed them (and could print a fake one), so they are ``claimed``."""
    found = []
    index = 0
    while index < len(lines):
        if TRACEBACK not in lines[index].text:
            index += 1
            continue
        start = lines[index]
        end = min(len(lines), index + 400)
        exception = None
        j = index + 1
        while j < end:
            text = lines[j].text.strip()
            if TRACEBACK in text:
                break
            match = EXCEPTION_RE.match(text)
            if match and not lines[j].text.startswith((" ", "\t")):
                exception = lines[j]
            j += 1
        block = "\n".join(line.text for line in lines[index:j])
        detail = next((name for name, p in CRASH_CLASSES if p.search(block)), "other")
        last = exception or start
        found.append(
            Failure(
                "training_crash",
                detail,
                last.text.strip()[:300],
                (
                    Evidence(start.source, start.text.strip()[:200], start.number),
                    Evidence(last.source, last.text.strip()[:300], last.number),
                ),
                basis="claimed",
            )
        )
        index = j
    return found


def run_failures(
    record: Any,
    submission_failures: Sequence[Failure | None],
    crash_list: Sequence[Failure],
    oom_kills: int,
) -> list[Failure]:
    """Run-level failures, in a fixed order of causes."""
    out: list[Failure] = []
    run = record.run
    end = run.end_reason if run is not None else None
    exit_code = run.agent_exit_code if run is not None else None
    if not record.submissions:
        out.append(Failure("no_submission", "", "the agent submitted nothing"))
    if oom_kills:
        out.append(
            Failure(
                "training_crash",
                "oom",
                f"the sandbox's memory limit killed {oom_kills} process(es)",
                (Evidence("run.json", f"sandbox.oom_kills = {oom_kills}"),),
            )
        )
    out += list(crash_list)
    if end == "deadline":
        out.append(
            Failure(
                "timeout",
                "",
                "the agent was still running at the wall-clock deadline and was stopped",
                (Evidence("run.json", "end_reason = deadline"),),
            )
        )
    budgets = {
        "token_budget": "tokens",
        "cost_budget": "cost",
        "max_submissions": "submissions",
        "disk_limit": "disk",
        "gpu_hours": "GPU-hours",
    }
    if end in budgets:
        out.append(
            Failure(
                "budget_exhausted",
                budgets[end],
                f"the run ended on its {budgets[end]} budget",
                (Evidence("run.json", f"end_reason = {end}"),),
            )
        )
    if end == "driver_unavailable":
        out.append(Failure("driver_unavailable", "", "the driver's upstream was down"))
    # 143/137 after a deadline or budget stop are the harness's own SIGTERM/SIGKILL, not a crash
    stopped_by_us = end is not None and end != "agent_exit" and exit_code in (143, 137, -15, -9)
    if exit_code not in (None, 0) and not crash_list and not oom_kills and not stopped_by_us:
        out.append(
            Failure(
                "agent_error",
                f"exit {exit_code}",
                f"the agent exited with status {exit_code}",
                (Evidence("run.json", f"agent_exit_code = {exit_code}"),),
            )
        )
    if run is not None and run.error:
        out.append(Failure("agent_error", "harness", str(run.error)[:300]))
    kinds = {f.type for f in submission_failures if f is not None}
    for kind in ("invalid_checkpoint", "evaluator_error"):
        if kind in kinds:
            first = next(f for f in submission_failures if f is not None and f.type == kind)
            n = sum(1 for f in submission_failures if f is not None and f.type == kind)
            out.append(Failure(kind, first.detail, f"{n} submission(s): {first.message}"[:300]))
    valid = [s for s in record.submissions if s.valid and s.score is not None]
    base = record.baseline.score if record.baseline is not None else None
    if valid and base is not None and all(s.score < base for s in valid):
        out.append(
            Failure(
                "regression",
                "",
                f"every valid submission scored below the baseline ({base:g})",
                (Evidence("submissions.jsonl", f"best {max(s.score for s in valid):g}"),),
            )
        )
    return out
