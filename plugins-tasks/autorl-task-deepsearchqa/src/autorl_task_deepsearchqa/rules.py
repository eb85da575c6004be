"""The rule judge: deterministic, offline grading by normalised match (labelled ``"rule"``).

* single answer: the normalised gold answer appears as whole words in the response, and the
  response is short (at most ``len(gold words) + SLACK_WORDS`` words), so "It is the Kelp Sea."
  counts and a paragraph naming every sea does not;
* set answer: every gold item must appear as whole words in the response (so an item holding
  "and" still matches), and the response, split into items at commas, semicolons, "and" and new
  lines, may list at most twice as many items as the gold set, so listing everything does not
  pay.

Standard library only (copied into the workspace kit: it is the kit's train-time reward).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .text import normalize_answer

SLACK_WORDS = 4
_SPLIT_RE = re.compile(r"\s*(?:,|;|\n|\band\b|&)\s*", re.IGNORECASE)


def _contains(haystack: str, needle: str) -> bool:
    return bool(needle) and f" {needle} " in f" {haystack} "


def split_items(response: str) -> list[str]:
    """The items of a list answer, normalised and without empties."""
    items = [normalize_answer(part) for part in _SPLIT_RE.split(response)]
    return [item for item in items if item]


def rule_correct(response: str, gold: Sequence[str], answer_type: str) -> bool:
    """Whether ``response`` answers the question whose gold items are ``gold``."""
    golds = [normalize_answer(g) for g in gold if normalize_answer(g)]
    if not golds:
        return False
    if answer_type == "set":
        items = split_items(response)
        if not items or len(items) > 2 * len(golds):
            return False
        whole = normalize_answer(response)
        return all(_contains(whole, g) for g in golds)
    answer = normalize_answer(response)
    limit = len(golds[0].split()) + SLACK_WORDS
    return len(answer.split()) <= limit and any(_contains(answer, g) for g in golds)
