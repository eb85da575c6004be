"""HumanEval workspace kit: the eval prompt, the code extraction, the train reward, the loader.

This one file is both the grader's protocol and the agent's kit. The task copies it verbatim into
``workspace/kit/autorl_kit.py``; the ``code`` evaluator imports it from the *installed* task
package (``autorl_task_humaneval.kit``), so editing the workspace copy changes nothing in grading.

Standard library only: the agent imports it with whatever Python it uses.

Metric: pass@1. The evaluator sends ``build_prompt(problem)`` (the problem's code prompt as plain
text, no chat template) to the model, decodes greedily with ``STOP_SEQUENCES`` as stop strings,
turns the output into a program with ``extract_code`` and runs it with the problem's tests and
``check(entry_point)`` in a confined process. A problem passes when every assertion holds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

STOP_SEQUENCES = ("\nclass ", "\nif __name__", "\nprint(", "\nassert ", "\n```", "\n#")
"""Top-level code that ends a function body (the evaluator stops generation at these)."""

FENCE_RE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
"""A Markdown code block; an unclosed block (cut at the ``\\n```` stop) runs to the end."""


def build_prompt(problem: dict[str, Any]) -> str:
    """The exact text the evaluator gives the model: the problem's ``prompt`` (imports, the
    signature and the docstring), which the model continues with the function body."""
    return str(problem["prompt"])


def truncate(completion: str) -> str:
    """``completion`` up to the first stop sequence (what the evaluator's generation keeps)."""
    cut = len(completion)
    for stop in STOP_SEQUENCES:
        index = completion.find(stop)
        if index != -1:
            cut = min(cut, index)
    return completion[:cut]


def extract_code(completion: str, problem: dict[str, Any]) -> str:
    """The candidate program for ``problem`` from a model output.

    * A Markdown code block (chat-style answers): the prompt followed by the block's code, so
      the block's own ``def <entry_point>`` replaces the stub and the prompt's imports hold.
    * Otherwise a continuation of the prompt (the usual case): the prompt plus the completion
      truncated at the first stop sequence. Helper functions defined after the body are kept.
    """
    prompt = build_prompt(problem)
    fenced = FENCE_RE.search(completion)
    if fenced and not completion.lstrip().startswith(("    ", "\t")):
        return prompt + "\n    pass\n\n" + fenced.group(1).rstrip() + "\n"
    return prompt + truncate(completion)


def check_program(completion: str, problem: dict[str, Any]) -> str:
    """The program the grader runs: candidate code, the problem's tests, ``check(entry_point)``."""
    code = extract_code(completion, problem)
    return f"{code}\n\n{problem['test']}\n\ncheck({problem['entry_point']})\n"


def _limit_child() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, 16 << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def reward(completion: str, problem: dict[str, Any], timeout: float = 5.0) -> float:
    """Train-time reward: 1.0 when the completion passes the train problem's tests, else 0.0.

    Runs the program in a child Python process (temp directory as cwd, 1 GiB memory, 16 MiB
    files, killed after ``timeout`` seconds). A convenience for training, weaker than the
    grader's sandbox: it has no network or user isolation.
    """
    program = check_program(completion, problem)
    with tempfile.TemporaryDirectory(prefix="autorl-reward-") as tmp:
        path = Path(tmp) / "program.py"
        path.write_text(program, encoding="utf-8")
        try:
            done = subprocess.run(
                [sys.executable, "-I", str(path)],
                cwd=tmp,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
                preexec_fn=_limit_child if os.name == "posix" else None,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONHASHSEED": "0"},
            )
        except subprocess.TimeoutExpired:
            return 0.0
    return 1.0 if done.returncode == 0 else 0.0


def completion_text(completion: Any) -> str:
    """A completion as text: TRL passes a string, or a list of chat messages when conversational."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    return str(completion)


def trl_reward(
    completions: list[Any], prompts: list[Any], test: list[str], entry_point: list[str], **_: Any
) -> list[float]:
    """``reward`` in TRL's reward-function shape; ``test`` and ``entry_point`` are dataset columns
    and the ``prompt`` column must be ``build_prompt(problem)``."""
    return [
        reward(completion_text(c), {"prompt": completion_text(p), "test": t, "entry_point": e})
        for c, p, t, e in zip(completions, prompts, test, entry_point, strict=True)
    ]


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a JSON-lines file; a bad line raises ValueError naming the file and line."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
    return rows


def load_train(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The train problems: dicts with ``task_id``, ``prompt``, ``canonical_solution``, ``test``
    and ``entry_point``.

    Default path: ``data/train.jsonl`` under ``$AUTORL_WORKSPACE`` (else the current directory).
    """
    if path is None:
        root = Path(os.environ.get("AUTORL_WORKSPACE") or ".")
        path = root / "data" / "train.jsonl"
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"train split not found at {path}; pass load_train(path=...) or set AUTORL_WORKSPACE "
            "to the workspace directory (the one holding data/train.jsonl)"
        )
    return read_jsonl(path)
