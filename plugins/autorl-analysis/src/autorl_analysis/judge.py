"""The optional LLM judge over the trajectory (see docs/analysis.md#llm-judge)."""

from __future__ import annotations

from typing import Any

from autorl_analysis.model import Flag


def judge_from_config(reader: Any) -> dict[str, Any] | None:
    """The judge's verdicts when one is configured; None otherwise."""
    return None


def verdict_flags(verdicts: dict[str, Any]) -> list[Flag]:
    return []
