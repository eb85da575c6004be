"""The reference implementation's raw-text ReAct prompt (task option ``prompt = "reference"``).

RD-Agent's ``autorl_bench`` DeepSearchQA evaluator (``benchmarks/deepsearchqa/eval.py``, commit
471eb30) sends raw text to vLLM (no chat template): :data:`REACT_SYSTEM_PROMPT`, a blank line,
then ``Question: ...\\nAnswer type: ...\\n\\nThought:``. Each step's greedy reply (256 tokens,
:data:`STOP`) is stripped and appended after a space; the action is read from that reply only
(:data:`ACTION_RE`). These strings are the protocol: they are written out exactly and pinned by
tests/test_reference_mode.py. Standard library only (copied into the workspace kit).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

REACT_SYSTEM_PROMPT = """You are a research assistant that answers questions by searching the web.

You must follow this format strictly:
Thought: [your reasoning]
Action: search[your search query]   <- to search the web
  OR
Action: answer[Paris]   <- to give final answer

Rules:
- Always start with a Thought
- Use search[] to find information
- Use answer[] ONLY when you have enough information
- For Set Answer questions, list all items separated by commas
- Be concise and factual
"""
STOP = ("\nAction:", "\nThought:", "\nObservation:")
"""The reference's stop strings for every step (an action is seen only on its thought's line)."""
MAX_NEW_TOKENS = 256
FORCED_ANSWER_TOKENS = 128
"""The forced answer's own limit in the reference (stop ``]``); see :mod:`env_reference`."""
MAX_STEPS = 6
ACTION_RE = re.compile(r"Action:\s*(search|answer)\[(.+?)\]", re.DOTALL)
ANSWER_RE = re.compile(r"Action:\s*answer\[(.+?)\]", re.DOTALL)
"""The answers the reference reads from the whole model trace when the steps run out."""
PLACEHOLDER = "your final answer"
"""A template answer the reference refuses (compared lower-cased)."""
FORCED_ANSWER = "\nAction: answer["
INVALID_ANSWER = "\nThat is not a valid answer. Please think again.\nThought:"
NO_ANSWER = "I don't know"
NO_RESULTS = "No results found."
SNIPPET_JOIN = " | "
SNIPPETS = 3
"""SerpAPI's ``organic_results[:3]``: at most three snippets per search."""
ANSWER_TYPES = {"single": "Single Answer", "set": "Set Answer"}
"""Our answer types as the data set writes them (the prompt and the judge show these)."""
EXPERT_THOUGHTS = {
    "search": "I need to look this up.",
    "answer": "I have enough information to answer.",
}


def question_block(question: str, answer_type: str) -> str:
    """The reference's ``conversation``: the question, its answer type, then ``Thought:``."""
    return f"Question: {question}\nAnswer type: {answer_type}\n\nThought:"


def start_prompt(question: str, answer_type: str) -> str:
    """The reference's first ``full_prompt``."""
    return f"{REACT_SYSTEM_PROMPT}\n\n{question_block(question, answer_type)}"


def observation_text(snippets: Sequence[str]) -> str:
    """What a search shows: the top three snippets joined by `` | ``, or ``No results found.``
    (joined first, as the reference does: two empty snippets still give `` | ``)."""
    return SNIPPET_JOIN.join(snippets[:SNIPPETS]) or NO_RESULTS


def search_suffix(observation: str) -> str:
    return f"\nObservation: {observation}\nThought:"


def build_reference_prompt(observations: Sequence[str]) -> str:
    """The raw text before the next reply: the reference environment's observations are the
    pieces it appended to ``full_prompt`` (the start, then per turn the stripped reply after a
    space and what followed it), so the prompt is their concatenation."""
    return "".join(observations)


def parse_reply(generated: str) -> tuple[str, str] | None:
    """``(verb, argument stripped)`` of the first action in a stripped reply, or None."""
    match = ACTION_RE.search(generated)
    return None if match is None else (match.group(1), match.group(2).strip())


def is_placeholder(answer: str) -> bool:
    return answer.strip().lower() == PLACEHOLDER


def last_answer(model_trace: str) -> str:
    """The reference's answer after the last step: the last non-placeholder ``answer[...]`` of
    the model trace (its replies and forced answers joined by new lines), else I don't know."""
    answers = [a.strip() for a in ANSWER_RE.findall(model_trace) if not is_placeholder(a)]
    return answers[-1] if answers else NO_ANSWER


def cut_forced_answer(reply: str) -> str:
    """A forced answer as the reference reads it: the reply up to the first ``]``, stripped."""
    return reply.split("]", 1)[0].strip()


def expert_reply(action: str) -> str:
    """The reply that takes a ``search[...]``/``answer[...]`` action in this format: a short
    thought and the action on the same line (a new line before ``Action:`` would stop the
    reference's generation before the action)."""
    verb = action.split("[", 1)[0].strip().lower()
    return f"{EXPERT_THOUGHTS.get(verb, EXPERT_THOUGHTS['search'])} Action: {action.strip()}"


def reply_text(reply: str) -> str:
    """The reply that is sent for a generated one: the reply itself (the environment reads it)."""
    return reply
