"""The fixed vocabulary of what the agent reads back about a submission.

A reason the agent reads (``/submit``, ``/submissions``) starts with one of :data:`CODES` and
carries only text the harness wrote: its own refusal messages (agent-chosen names cut and
``repr``-quoted). An exception raised while *evaluating* may carry held-out data (a chat template
can raise the eval question; an evaluator can quote an example), so the agent reads only its code
and the exception's type; the text goes to the harness's own records (``error`` in
``submissions.jsonl``), bounded.
"""

from __future__ import annotations

from typing import Any

from autorl.errors import CheckpointError, EvaluationTimeout

INVALID = "checkpoint_invalid"
ARCHITECTURE = "config_changes_architecture"
DUPLICATE = "duplicate"
COPY_OF_BASE = "copy_of_base"
EVALUATION_FAILED = "evaluation_failed"
EVALUATION_TIMEOUT = "evaluation_timeout"
HARNESS = "harness_error"
DEADLINE = "deadline"

CODES: dict[str, str] = {
    INVALID: "the checkpoint cannot be used as submitted (the text says what and how to fix it)",
    ARCHITECTURE: "config.json changes the base model's architecture or asks for remote code",
    DUPLICATE: "the same weights were submitted before; not evaluated again",
    COPY_OF_BASE: "the weights are the base model's; scored as the baseline",
    EVALUATION_FAILED: "the weights loaded but the evaluation failed (only the error's type)",
    EVALUATION_TIMEOUT: "the evaluation ran past its deadline (a multiple of the baseline's time)",
    HARNESS: "the harness failed, not the agent (intake bug, harness stopped)",
    DEADLINE: "the run ended before this submission could be evaluated",
}
"""Every reason code, with what it means (docs/security.md lists them)."""
ERROR_CHARS = 2000
"""The exception text kept in the harness's records (never shown to the agent)."""


def text(code: str, detail: str) -> str:
    if code not in CODES:
        raise ValueError(f"unknown reason code {code!r}")
    return f"{code}: {detail}"


def code_of(reason: str | None) -> str | None:
    """The code a reason starts with (None for reasons recorded before codes existed)."""
    if not reason:
        return None
    head = reason.split(":", 1)[0]
    return head if head in CODES else None


def invalid(message: str) -> str:
    """A refusal the harness wrote (``CheckpointError``): its code, or ``checkpoint_invalid``."""
    return message if code_of(message) is not None else text(INVALID, message)


def from_exception(exc: BaseException) -> tuple[str, dict[str, Any]]:
    """(the reason the agent reads, fields for the harness's record) of an evaluation error."""
    error = f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]
    if isinstance(exc, EvaluationTimeout):
        return (
            text(EVALUATION_TIMEOUT, f"the evaluation ran past its {exc.limit_s:.0f} s deadline"),
            {"error": error},
        )
    if isinstance(exc, CheckpointError) and not exc.__cause__:
        # raised by the model layer while loading, before any held-out example is read
        message = " ".join(str(exc).split())[:400]
        return invalid(message), {"error": error}
    return (
        text(
            EVALUATION_FAILED,
            f"the checkpoint could not be evaluated under the task's protocol "
            f"({type(exc).__name__}); the error's text stays in the harness's records",
        ),
        {"error": error},
    )
