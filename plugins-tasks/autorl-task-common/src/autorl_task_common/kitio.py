"""What a workspace kit module reads: the train split, TRL's completions, the run's config.

A single-module kit (gsm8k, humaneval, alpacaeval) is one file that is both the grader's
protocol and the agent's kit: the task copies it verbatim into ``workspace/kit/autorl_kit.py``
(:func:`autorl_task_common.kits.module_kit`), and the evaluator imports it from the *installed*
task package, so editing the workspace copy changes nothing in grading. A run that configures
the protocol writes ``config.json`` beside the copy (:func:`kit_config`), so the copy's
functions are the grader's. The kit module imports these helpers: the grader from the installed
package, the agent from the kit's copy (``kit/autorl_task_common/``, next to ``autorl_kit.py``;
``kit/`` is on the agent's ``PYTHONPATH``). Standard library only, as the kit module: the agent
imports it with whatever Python it uses.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

TRAIN_FILE = Path("data") / "train.jsonl"


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
    """The rows of the train split at ``path``; by default ``data/train.jsonl`` under
    ``$AUTORL_WORKSPACE`` (else the current directory). A missing file says how to point at it."""
    if path is None:
        path = Path(os.environ.get("AUTORL_WORKSPACE") or ".") / TRAIN_FILE
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"train split not found at {path}; pass load_train(path=...) or set AUTORL_WORKSPACE "
            "to the workspace directory (the one holding data/train.jsonl)"
        )
    return read_jsonl(path)


def completion_text(completion: Any) -> str:
    """A completion as text: TRL passes a string, or a list of chat messages when conversational."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    return str(completion)


def kit_config(module_file: str | os.PathLike[str]) -> dict[str, Any] | None:
    """``config.json`` beside a kit module: the run's protocol, written into a workspace copy by
    the task; None beside the installed module (the grader's own defaults)."""
    config = Path(module_file).with_name("config.json")
    if not config.is_file():
        return None
    return json.loads(config.read_text(encoding="utf-8"))


def serve_protocol(namespace: dict[str, Any], protocol: Any, names: tuple[str, ...]) -> None:
    """Rebind a kit module's ``names`` (``namespace`` is its ``globals()``) to ``protocol``'s
    members: a workspace copy whose ``config.json`` chose a protocol then trains with exactly
    the functions the grader uses for it."""
    namespace.update({name: getattr(protocol, name) for name in names})
