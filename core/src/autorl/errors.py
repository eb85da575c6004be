"""User-facing errors: each says what went wrong, where, and how to fix it."""

from __future__ import annotations


class AutorlError(Exception):
    """An error the CLI prints as a message (no traceback), with an optional hint."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class ConfigError(AutorlError):
    """A run config, flag or file is invalid."""


class RegistryError(AutorlError):
    """A component name is unknown, ambiguous or supplied twice."""


class PluginError(AutorlError):
    """A plugin failed to load or does not honour its kind's protocol."""


class CheckpointError(Exception):
    """A submission cannot be accepted; the message says what is wrong and how to fix it. The
    grading service turns it into a failed submission (never a crashed run), so an evaluator or
    the model layer raises it (or a subclass) for a checkpoint it cannot load."""


class EvaluationTimeout(Exception):
    """An evaluation ran past its deadline (a multiple of the baseline's measured evaluation
    time): the submission fails with ``evaluation_timeout``. Raised from the progress callback
    the harness hands the evaluator, so every evaluator that reports progress is bounded."""

    def __init__(self, limit_s: float) -> None:
        super().__init__(f"the evaluation ran past its deadline of {limit_s:.0f} s")
        self.limit_s = limit_s
