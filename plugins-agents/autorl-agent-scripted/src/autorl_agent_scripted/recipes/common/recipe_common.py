"""Helpers shared by the reference recipes: grader client, clock, checkpoints, logging, planning.

Copied into ``workspace/code/`` next to the task's ``recipe.py`` (with ``rounds.py``, the loop
built on them, ``training.py`` and ``interactive.py``). It runs as the agent: it may
use only the workspace (``$AUTORL_WORKSPACE``), the grading API and the installed training
stack. Standard library at import time; torch/transformers/peft are imported inside functions.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STARTED = time.monotonic()


def log(message: str) -> None:
    """One progress line on stdout (the harness keeps it in the agent log)."""
    print(f"[recipe {time.monotonic() - STARTED:7.1f}s] {message}", flush=True)


def workspace() -> Path:
    """The workspace root: ``$AUTORL_WORKSPACE``, else the current directory."""
    root = Path(os.environ.get("AUTORL_WORKSPACE") or ".").resolve()
    if not (root / "models" / "base").exists():
        sys.exit(
            f"recipe: {root} is not a workspace (no models/base); run it from the workspace "
            "or set AUTORL_WORKSPACE"
        )
    return root


class GraderError(RuntimeError):
    """The grading API refused a request; ``status`` is the HTTP status (0: unreachable)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}: {detail}" if status else detail)
        self.status = status
        self.detail = detail


@dataclass
class GraderClient:
    """The grading API over plain HTTP with the run's bearer token."""

    url: str
    token: str
    timeout: float = 30.0

    @classmethod
    def from_env(cls) -> GraderClient:
        url, token = os.environ.get("AUTORL_GRADER_URL"), os.environ.get("AUTORL_TOKEN")
        if not url or not token:
            sys.exit("recipe: AUTORL_GRADER_URL and AUTORL_TOKEN must be set (the harness does)")
        return cls(url.rstrip("/"), token)

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 0
    ) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raw = exc.read().decode("utf-8", "replace")
            try:
                detail = json.loads(raw).get("detail", raw)
            except (json.JSONDecodeError, AttributeError):
                detail = raw
            raise GraderError(exc.code, str(detail)) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise GraderError(0, f"grader unreachable at {self.url}: {exc}") from None

    def budget(self) -> dict[str, Any]:
        return self._call("GET", "/budget")

    def submit(self, model_path: str, *, wait: bool = False, timeout: float = 0) -> dict[str, Any]:
        return self._call(
            "POST", "/submit", {"model_path": model_path, "wait": wait}, timeout=timeout
        )

    def submission(self, submission_id: int) -> dict[str, Any]:
        return self._call("GET", f"/submissions/{submission_id}")


@dataclass
class Clock:
    """Agent time left, from ``GET /budget`` at start, minus a safety margin."""

    deadline: float
    """``time.monotonic()`` by which the recipe wants to be done (margin already taken off)."""
    budget_s: float
    margin_s: float

    @classmethod
    def from_budget(cls, budget: dict[str, Any], margin_fraction: float, min_margin_s: float):
        remaining = float(budget.get("remaining_s") or budget.get("budget_s") or 0.0)
        total = float(budget.get("budget_s") or remaining)
        margin = max(min_margin_s, margin_fraction * total)
        return cls(time.monotonic() + remaining - margin, total, margin)

    def left(self) -> float:
        return self.deadline - time.monotonic()


@dataclass
class Submissions:
    """What this recipe submitted, and the scores as the grader reports them."""

    client: GraderClient
    max_submissions: int
    used: int = 0
    ids: list[int] = field(default_factory=list)
    scores: dict[int, float | None] = field(default_factory=dict)

    def left(self) -> int:
        return self.max_submissions - self.used

    def submit(self, model_path: str) -> int | None:
        """Queue an evaluation (no waiting: training goes on meanwhile); None when refused."""
        try:
            record = self.client.submit(model_path, wait=False)
        except GraderError as exc:
            log(f"submission of {model_path} refused: {exc}")
            return None
        self.used += record.get("status") != "duplicate"
        submission_id = int(record["submission_id"])
        self.ids.append(submission_id)
        log(f"submitted {model_path}: id {submission_id}, status {record.get('status')}")
        return submission_id

    def poll(self) -> None:
        """Fetch final scores of submissions not yet reported, and print them."""
        for submission_id in self.ids:
            if submission_id in self.scores:
                continue
            try:
                record = self.client.submission(submission_id)
            except GraderError as exc:
                log(f"could not read submission {submission_id}: {exc}")
                continue
            if record.get("status") in ("scored", "duplicate", "failed"):
                self.scores[submission_id] = record.get("score")
                reason = f" - {record['reason']}" if record.get("reason") else ""
                log(
                    f"submission {submission_id}: {record.get('status')} score "
                    f"{record.get('score')} (baseline {record.get('baseline_score')}, best "
                    f"{record.get('best_score')}){reason}"
                )

    def pending(self) -> int:
        """Submissions not final at the last :meth:`poll` (the grader is evaluating them)."""
        return len(self.ids) - len(self.scores)


def group_advantages(rewards: Sequence[float], groups: Sequence[Hashable]) -> list[float]:
    """GRPO's advantage of each reward: minus its group's mean (``groups[i]`` names reward
    ``i``'s group), over the group's sample standard deviation + 1e-4; a group whose rewards are
    all alike gives exact zeros.

    The sample (unbiased, n - 1) standard deviation is the one TRL's GRPOTrainer uses (torch's
    ``std`` default) in the recipes' single-turn TRL phase: the DeepSpeed loop and the
    interactive loop then scale a group's advantages as that phase does, so choosing a route
    never changes the step size by sqrt(n / (n - 1)). A group of one has no spread: zero.
    Exact zeros (not a rounding error over 1e-4) let a caller drop a batch without signal.
    """
    members: dict[Hashable, list[float]] = {}
    for reward, group in zip(rewards, groups, strict=True):
        members.setdefault(group, []).append(reward)
    stats = {}
    for group, values in members.items():
        mean = sum(values) / len(values)
        std = (sum((r - mean) ** 2 for r in values) / max(1, len(values) - 1)) ** 0.5
        stats[group] = (mean, std)
    out = []
    for reward, group in zip(rewards, groups, strict=True):
        mean, std = stats[group]
        out.append(0.0 if std < 1e-6 else (reward - mean) / (std + 1e-4))
    return out


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def share_cores(grader_busy: bool, cores: int) -> int:
    """Torch threads for the next step on a CPU: one core fewer while the grader evaluates a
    submission on the same machine. Threads of one op wait for each other, so two training
    threads beside the grader's stall each other and it; one thread each keeps both going."""
    import torch

    wanted = max(1, cores - 1) if grader_busy else cores
    if device() == "cpu" and torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)
    return wanted


def load_base(path: Path) -> tuple[Any, Any]:
    """The base model in training precision (fp32 on CPU, bf16 on GPU) and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    on_gpu = device() == "cuda"
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # loading and saving bars would flood agent.log
    model = AutoModelForCausalLM.from_pretrained(
        str(path), dtype=torch.bfloat16 if on_gpu else torch.float32
    )
    if on_gpu:
        model.to("cuda")
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def merged(model: Any) -> Any:
    """A plain transformers model: LoRA adapters merged in, when there are any."""
    if hasattr(model, "merge_and_unload"):
        return model.merge_and_unload()
    return model


def save_checkpoint(model: Any, tokenizer: Any, target: Path) -> float:
    """Save a full HF directory (weights, config, tokenizer, chat template) atomically.

    Written to a staging directory and renamed, so a submission never sees half a checkpoint.
    Returns the seconds it took (the planner reserves that much for the next save).
    """
    started = time.monotonic()
    staging = target.with_name(f".{target.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(str(staging), safe_serialization=True)
    tokenizer.save_pretrained(str(staging))
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    seconds = time.monotonic() - started
    log(f"saved {target.name} in {seconds:.1f}s")
    return seconds


def warmup_steps(planned_steps: int) -> int:
    """Learning-rate warm-up sized to the phase: none under 20 planned steps, else 10 % (max 5).

    A fixed 5-step warm-up let a phase that got 1-2 steps train at lr 0 (unchanged weights, a
    duplicate submission); short phases on a budget need every step at full rate.
    """
    if planned_steps < 20:
        return 0
    return min(5, planned_steps // 10)


def planned_steps(max_steps: int, seconds: float, step_seconds: float | None) -> int:
    """The steps a phase expects to run: its cap, or fewer when the measured step time says the
    time share ends first (``step_seconds`` None: not measured yet, the cap stands)."""
    if not step_seconds or step_seconds <= 0:
        return max(1, max_steps)
    return max(1, min(max_steps, int(seconds / step_seconds)))


def phase_warmup(max_steps: int, seconds: float, step_seconds: float | None) -> int:
    """Warm-up steps for a phase capped at ``max_steps`` with ``seconds`` to run.

    No warm-up until a step has been timed (the first phase of a run): without a measurement
    the phase may get a single step, and a warm-up would spend it at lr 0.
    """
    if not step_seconds:
        return 0
    return warmup_steps(planned_steps(max_steps, seconds, step_seconds))


@dataclass
class StepTimes:
    """Measured seconds per training step, per phase kind; the planner sizes later phases by it."""

    seconds: dict[str, float] = field(default_factory=dict)
    sizes: dict[str, float] = field(default_factory=dict)
    """The work per step the time was measured at (e.g. sampled tokens), for rescaling."""

    def get(self, kind: str, size: float | None = None) -> float | None:
        """Seconds a step of ``kind`` takes; scaled linearly to ``size`` when both are known."""
        measured = self.seconds.get(kind)
        if measured is None or size is None or not self.sizes.get(kind):
            return measured
        return measured * size / self.sizes[kind]

    def record(self, kind: str, callback: Any, size: float | None = None) -> None:
        """Keep the slowest step a ``stop_at_callback`` saw (the cautious figure for planning)."""
        slowest = getattr(callback, "slowest", 0.0)
        if slowest > 0:
            self.seconds[kind] = slowest
            if size is not None:
                self.sizes[kind] = size


def fit_generation_shape(
    share_s: float,
    step_s: float,
    prompts: int,
    generations: int,
    new_tokens: int,
    *,
    min_new_tokens: int = 32,
    min_steps: int = 2,
) -> tuple[int, int, int]:
    """Shrink an RL step (prompts x generations x new tokens) until ``min_steps`` steps fit.

    ``step_s`` is the measured (or estimated) seconds of a step at the given shape; generation
    cost is about proportional to the number of sampled tokens, so halving one factor halves
    the step. New tokens go first (down to ``min_new_tokens``), then prompts, then generations
    (GRPO needs at least 2 per prompt for a group advantage).
    """
    shape = [prompts, generations, new_tokens]
    full = prompts * generations * new_tokens

    def predicted() -> float:
        return step_s * (shape[0] * shape[1] * shape[2]) / full

    while predicted() * min_steps > share_s:
        if shape[2] // 2 >= min_new_tokens:
            shape[2] //= 2
        elif shape[0] > 1:
            shape[0] = max(1, shape[0] // 2)
        elif shape[1] > 2:
            shape[1] = max(2, shape[1] // 2)
        else:
            break
    return shape[0], shape[1], shape[2]


def estimate_generation_step_seconds(
    model: Any, tokenizer: Any, prompt: str, sequences: int, new_tokens: int, probe_tokens: int = 8
) -> float:
    """Seconds an RL step of ``sequences`` x ``new_tokens`` sampled tokens should take.

    Times a short sampled generation (``probe_tokens`` per sequence) and scales it to
    ``new_tokens``, plus half again for the policy's forward and backward pass. Used before the
    first RL step of a run, when no step has been measured yet.
    """
    import torch

    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    enc = tokenizer([prompt] * sequences, return_tensors="pt", padding=True).to(model.device)
    tokenizer.padding_side = side
    started = time.monotonic()
    with torch.no_grad():
        model.generate(
            **enc,
            do_sample=True,
            max_new_tokens=probe_tokens,
            min_new_tokens=probe_tokens,
            pad_token_id=tokenizer.pad_token_id,
        )
    took = time.monotonic() - started
    return 1.5 * took * new_tokens / probe_tokens


def stop_at_callback(stop_at: float, label: str = "phase") -> Any:
    """A TrainerCallback that ends training before ``stop_at`` (monotonic) and logs losses.

    It stops once the next step, as long as the slowest so far, would end after ``stop_at``: a
    phase never overruns its share by a whole step (GRPO steps can take many seconds). A step
    that itself ends past ``stop_at`` (typically the first one, before anything was measured)
    is logged with the overrun, never silent. ``slowest`` is kept for planning later phases.
    """
    from transformers import TrainerCallback

    class StopAt(TrainerCallback):
        def __init__(self) -> None:
            self.step_started = time.monotonic()
            self.slowest = 0.0
            self.overrun_s = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            self.step_started = time.monotonic()
            return control

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            now = time.monotonic()
            took = now - self.step_started
            self.slowest = max(self.slowest, took)
            if now > stop_at:
                self.overrun_s = now - stop_at
                log(
                    f"  {label}: step {state.global_step} took {took:.1f}s and ended "
                    f"{self.overrun_s:.1f}s past the phase's time share"
                )
            if now + self.slowest >= stop_at:
                control.should_training_stop = True
            return control

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any):
            keys = ("loss", "reward", "learning_rate")
            shown = ", ".join(f"{k}={logs[k]:.4g}" for k in keys if logs and k in logs)
            if shown:
                log(f"  step {state.global_step}/{state.max_steps}: {shown}")

    return StopAt()
