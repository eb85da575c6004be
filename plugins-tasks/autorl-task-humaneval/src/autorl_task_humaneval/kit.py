"""HumanEval workspace kit: the eval prompt, the code extraction, the train reward, the loader.

A single-module kit (:mod:`autorl_task_common.kitio` says how it ships): the grader's protocol,
which the ``code`` evaluator imports from the installed ``autorl_task_humaneval.kit``, and the
agent's ``kit/autorl_kit.py``. Standard library only.

Metric: pass@1. The evaluator sends ``build_prompt(problem)`` to the model, decodes greedily
(stopping at ``STOP_SEQUENCES``, if any), turns the output into a program with ``extract_code``
and runs it with the problem's tests and ``check(entry_point)`` in a confined process. A problem
passes when every assertion holds.

Two prompts (task option ``prompt``): ``completion`` (the default, the module's functions: the
problem's code prompt as plain text, which the model continues with the body, cut at
``STOP_SEQUENCES``) and ``reference`` (the paper's, OpenCompass ``humaneval_gen``: an instruction
and the code prompt as one user turn through the model's chat template, no stop strings, the
first Markdown code block of the reply, or the whole reply, appended to the code prompt;
``REFERENCE``, the contract ``autorl_task_humaneval.kit:REFERENCE``). The workspace copy reads
``config.json`` beside it, which names the run's prompt, so its functions are the ones the grader
uses.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from autorl_task_common import kitio
from autorl_task_common.kitio import completion_text, kit_config
from autorl_task_common.kitio import read_jsonl as read_jsonl  # part of the kit's API

COMPLETION_STOP_SEQUENCES = ("\nclass ", "\nif __name__", "\nprint(", "\nassert ", "\n```", "\n#")
"""Top-level code that ends a function body (the evaluator stops generation at these)."""
STOP_SEQUENCES = COMPLETION_STOP_SEQUENCES
"""The stop strings of this copy's protocol (none with the reference prompt)."""

FENCE_RE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
"""A Markdown code block; an unclosed block (cut at the ``\\n```` stop) runs to the end."""


REFERENCE_INSTRUCTION = (
    "Read the following function signature and docstring, and fully implement the function "
    "described. Your response should only contain the code for this function.\n"
)
"""What the reference's user turn says before the code prompt (OpenCompass ``humaneval_gen``,
i.e. ``humaneval_openai_sample_evals_gen_dcae0e``: ``'<this>{prompt}'``, role HUMAN)."""

REFERENCE_FENCE_RE = re.compile(r"```\w*\n(.*?)```", re.DOTALL)
"""The reference's code block (OpenCompass ``humaneval_postprocess_v2``): a closed fence whose
opening line is only a language word; the first one counts."""

THINK_RE = re.compile(r"<think>(.*?)</think>", re.DOTALL)
"""Reasoning blocks, removed before the reference's extraction (its model-level post-processor
``extract-non-reasoning-content``)."""


def build_prompt(problem: dict[str, Any]) -> str:
    """The exact text the evaluator gives the model: the problem's ``prompt`` (imports, the
    signature and the docstring), which the model continues with the function body."""
    return str(problem["prompt"])


def truncate(completion: str) -> str:
    """``completion`` up to the first stop sequence (what the evaluator's generation keeps)."""
    cut = len(completion)
    for stop in COMPLETION_STOP_SEQUENCES:
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
    prompt = str(problem["prompt"])
    fenced = FENCE_RE.search(completion)
    if fenced and not completion.lstrip().startswith(("    ", "\t")):
        return prompt + "\n    pass\n\n" + fenced.group(1).rstrip() + "\n"
    return prompt + truncate(completion)


def answer_text(problem: dict[str, Any], body: str) -> str:
    """What a model should reply, given a correct function ``body`` (e.g. the canonical
    solution): the body itself, which continues the prompt (what SFT on this prompt learns)."""
    return body


def prompt_ids(problem: dict[str, Any], tokenizer: Any) -> list[int]:
    """Token ids of ``build_prompt(problem)`` exactly as the evaluator encodes them (a Hugging
    Face tokenizer): text with the tokenizer's special tokens; chat messages through its chat
    template with the generation prompt, adding no special tokens (the template holds them)."""
    return _encode(build_prompt(problem), tokenizer)


def _encode(prompt: Any, tokenizer: Any) -> list[int]:
    if isinstance(prompt, str):
        return list(tokenizer(prompt)["input_ids"])
    text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def check_program(completion: str, problem: dict[str, Any]) -> str:
    """The program the grader runs: candidate code, the problem's tests, ``check(entry_point)``."""
    return _program(extract_code(completion, problem), problem)


def _program(code: str, problem: dict[str, Any]) -> str:
    return f"{code}\n\n{problem['test']}\n\ncheck({problem['entry_point']})\n"


def without_reasoning(text: str) -> str:
    """``text`` without ``<think>...</think>`` blocks (or, with only a closing tag, what follows
    it), stripped: the reference's ``extract-non-reasoning-content``."""
    if "<think>" not in text and "</think>" in text:
        return text.split("</think>")[-1].strip()
    return THINK_RE.sub("", text).strip()


def reference_completion(text: str) -> str:
    """The completion the reference appends to the code prompt: the reply without reasoning,
    then the first Markdown code block's content (or the whole reply when it has none), with
    leading whitespace removed (OpenCompass ``humaneval_postprocess_v2``)."""
    text = without_reasoning(text)
    blocks = REFERENCE_FENCE_RE.findall(text)
    if blocks:
        text = blocks[0]
    return text.lstrip()


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
    return _run(check_program(completion, problem), timeout)


def _run(program: str, timeout: float) -> float:
    """1.0 when ``program`` exits cleanly in a confined child process, else 0.0."""
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


def trl_reward(
    completions: list[Any], prompts: list[Any], test: list[str], entry_point: list[str], **_: Any
) -> list[float]:
    """``reward`` in TRL's reward-function shape; ``test`` and ``entry_point`` are dataset columns
    and the ``prompt`` column must be ``build_prompt(problem)``."""
    return [
        reward(completion_text(c), {"prompt": code_prompt(p), "test": t, "entry_point": e})
        for c, p, t, e in zip(completions, prompts, test, entry_point, strict=True)
    ]


def code_prompt(prompt: Any) -> str:
    """The problem's code prompt back from ``build_prompt(problem)`` under either protocol (the
    text itself, or the user turn after ``REFERENCE_INSTRUCTION``)."""
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        prompt = users[-1].get("content", "") if users else completion_text(prompt)
    text = str(prompt)
    return text[len(REFERENCE_INSTRUCTION) :] if text.startswith(REFERENCE_INSTRUCTION) else text


def load_train(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The train problems: dicts with ``task_id``, ``prompt``, ``canonical_solution``, ``test``
    and ``entry_point``.
    (``data/train.jsonl`` of the workspace by default: :func:`autorl_task_common.kitio.load_train`).
    """
    return kitio.load_train(path)


_completion_build_prompt = build_prompt
_completion_extract_code = extract_code
_completion_truncate = truncate
_completion_answer_text = answer_text


class Protocol:
    """One way of prompting and reading: ``"completion"`` (the functions above) or
    ``"reference"`` (OpenCompass ``humaneval_gen``, the paper's). The ``code`` contract, plus
    the training helpers of the module (``truncate``, ``answer_text``, ``prompt_ids``,
    ``check_program``, ``reward``, ``trl_reward``) under the same protocol."""

    def __init__(self, name: str = "completion"):
        if name not in ("completion", "reference"):
            raise ValueError(f"unknown HumanEval prompt {name!r}: 'completion' or 'reference'")
        self.name = name
        self.STOP_SEQUENCES: tuple[str, ...] = (
            () if name == "reference" else COMPLETION_STOP_SEQUENCES
        )
        """The reference stops only at the model's end-of-turn tokens."""

    def build_prompt(self, problem: dict[str, Any]) -> str | list[dict[str, str]]:
        """Completion: the code prompt as text. Reference: one user turn, the instruction then
        the code prompt (the evaluator sends it through the model's chat template)."""
        if self.name != "reference":
            return _completion_build_prompt(problem)
        return [{"role": "user", "content": REFERENCE_INSTRUCTION + str(problem["prompt"])}]

    def extract_code(self, completion: str, problem: dict[str, Any]) -> str:
        """Reference: the code prompt followed by ``reference_completion(completion)``, as the
        reference's ``human_eval`` builds its program (a reply holding the whole function
        redefines the stub after it)."""
        if self.name != "reference":
            return _completion_extract_code(completion, problem)
        return str(problem["prompt"]) + reference_completion(completion)

    def truncate(self, completion: str) -> str:
        """What generation keeps of ``completion`` (the reference has no stop strings)."""
        return completion if self.name == "reference" else _completion_truncate(completion)

    def answer_text(self, problem: dict[str, Any], body: str) -> str:
        """A reply that passes, given a correct ``body``. Reference: the whole function (the code
        prompt and the body) in a ```python block, as the instruction asks."""
        if self.name != "reference":
            return _completion_answer_text(problem, body)
        return f"```python\n{problem['prompt']}{body.rstrip()}\n```"

    def prompt_ids(self, problem: dict[str, Any], tokenizer: Any) -> list[int]:
        return _encode(self.build_prompt(problem), tokenizer)

    def check_program(self, completion: str, problem: dict[str, Any]) -> str:
        return _program(self.extract_code(completion, problem), problem)

    def reward(self, completion: str, problem: dict[str, Any], timeout: float = 5.0) -> float:
        return _run(self.check_program(completion, problem), timeout)

    def trl_reward(
        self,
        completions: list[Any],
        prompts: list[Any],
        test: list[str],
        entry_point: list[str],
        **_: Any,
    ) -> list[float]:
        return [
            self.reward(completion_text(c), {"prompt": code_prompt(p), "test": t, "entry_point": e})
            for c, p, t, e in zip(completions, prompts, test, entry_point, strict=True)
        ]


REFERENCE = Protocol("reference")
"""The reference's protocol: the contract of the ``reference`` prompt."""


def _workspace_protocol() -> Protocol | None:
    """The run's protocol when this file is a workspace copy with ``config.json`` beside it."""
    settings = kit_config(__file__)
    return None if settings is None else Protocol(settings.get("protocol", "completion"))


ACTIVE = _workspace_protocol()
"""This copy's protocol when a run configured it (the reference's with ``prompt = "reference"``)."""
if ACTIVE is not None and ACTIVE.name == "reference":
    kitio.serve_protocol(
        globals(),
        ACTIVE,
        (
            "STOP_SEQUENCES",
            "build_prompt",
            "extract_code",
            "truncate",
            "answer_text",
            "prompt_ids",
            "check_program",
            "reward",
            "trl_reward",
        ),
    )
