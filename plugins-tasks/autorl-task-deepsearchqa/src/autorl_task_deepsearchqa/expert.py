"""The scripted expert: search what finds each supporting document, then give the gold answer.

For the shipped questions ``searches`` holds the titles of the supporting entries (in hop order);
a question without them (the real data set) gets one search for the question text. Standard
library only (copied into the kit).
"""

from __future__ import annotations

from .corpus import Question


def expert_actions(question: Question, max_steps: int) -> list[str]:
    """At most ``max_steps - 1`` searches, then ``answer[<gold>]``."""
    searches = list(question.searches) or [question.question]
    actions = [f"search[{s}]" for s in searches[: max(0, max_steps - 1)]]
    return [*actions, f"answer[{question.gold_text}]"]
