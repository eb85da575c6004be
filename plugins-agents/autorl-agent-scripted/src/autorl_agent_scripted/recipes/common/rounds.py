"""The loop every reference recipe shares: the budget clock, the phases, save, submit, results.

A task's ``recipe.py`` loads its data, writes one function per kind of phase (``sft``, ``grpo``,
``ei``...) and hands them to :func:`run_rounds`, which owns the rest:

1. ``GET /budget``: the time left and the submissions left; it works until ``remaining -
   margin`` (``--margin`` of the budget, at least ``--min-margin`` seconds);
2. loads ``models/base`` (fp32 on CPU, bf16 on a GPU) into :class:`Run`;
3. runs the phases in order, each for its share of the time left (``share``, at most
   ``--phase-seconds``), while
   submissions and time last; after a phase with at least one step: merge, save
   ``output/<checkpoint>`` atomically, ``POST /submit`` without waiting (the grader evaluates
   while the next phase trains);
4. polls the submissions once, logs the best scored so far and exits: waiting for the last
   evaluation would hold the agent's phase open (and the run's wall time) with nothing left
   to do; the grader finishes it after the agent.

A phase function takes the :class:`Run` and its seconds and returns ``(model, steps)``: the
(merged) model to go on with and the optimiser steps it ran (0: nothing to save).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recipe_common import (
    Clock,
    GraderClient,
    StepTimes,
    Submissions,
    device,
    load_base,
    log,
    save_checkpoint,
    workspace,
)


def recipe_parser(
    description: str, *, margin: float = 0.08, rounds: bool = False
) -> argparse.ArgumentParser:
    """The flags every recipe has (``--mode``, ``--lora-r``, ``--margin``, ``--min-margin``,
    ``--seed``; with ``rounds``, ``--rounds``); a recipe adds its own and parses."""
    env = os.environ.get
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--mode", choices=("lora", "full"), default=env("RECIPE_MODE", "lora"))
    if rounds:
        p.add_argument(
            "--rounds",
            type=int,
            default=int(env("RECIPE_ROUNDS", "2")),
            help="at most this many rounds of the recipe's phases, one submission a phase "
            "(fewer when the budget is short)",
        )
    p.add_argument("--lora-r", type=int, default=16)
    p.add_argument(
        "--deepspeed",
        choices=("zero2", "zero3"),
        default=env("RECIPE_DEEPSPEED") or None,
        help="SFT and GRPO (static-prompt recipes: gsm8k) under DeepSpeed ZeRO stage 2 or 3 "
        "(accelerate), on --processes ranks",
    )
    p.add_argument(
        "--processes",
        type=int,
        default=None,
        help="DeepSpeed ranks (default: one per visible GPU, else 1)",
    )
    p.add_argument(
        "--margin",
        type=float,
        default=margin,
        help="share of the budget kept free at the end (at least --min-margin s)",
    )
    p.add_argument("--min-margin", type=float, default=8.0)
    p.add_argument(
        "--phase-seconds",
        type=float,
        default=None,
        help="cap on each phase's seconds (default: its share of the budget); the run ends "
        "when its phases are done, however much budget is left",
    )
    p.add_argument("--seed", type=int, default=int(env("AUTORL_SEED", "0") or 0))
    return p


@dataclass
class Run:
    """What a phase function sees: the model in training and the run's clock and records."""

    args: argparse.Namespace
    root: Path
    clock: Clock
    subs: Submissions
    model: Any
    tokenizer: Any
    save_reserve: float
    """Seconds kept free for the next save (estimated from the model size, then 1.5x the
    slowest save so far)."""
    phases: list[str] = field(default_factory=list)
    index: int = 0
    """The phase running (0-based)."""
    version: int = 0
    """Checkpoints saved so far."""
    step_times: StepTimes = field(default_factory=StepTimes)

    @property
    def scratch(self) -> Path:
        """The trainers' scratch directory (nothing is saved there)."""
        return self.root / "output" / ".trainer"

    @property
    def seed(self) -> int:
        """This phase's seed: ``--seed`` plus the phase index."""
        return self.args.seed + self.index

    def phases_left(self) -> int:
        """Phases still to run, this one included."""
        return len(self.phases) - self.index


Phase = Callable[[Run, float], tuple[Any, int]]
"""``(run, seconds) -> (model, steps)``."""


def phase_seconds(left: float, reserve: float, phases_left: int) -> float:
    """This phase's share of the time left after keeping ``reserve`` for its save."""
    return max(0.0, (left - reserve) / max(1, phases_left))


def even_share(run: Run, phase: str) -> float:
    """The time left, less one save's reserve, split evenly over the phases left."""
    return phase_seconds(run.clock.left(), run.save_reserve, run.phases_left())


def reserve_each_save(run: Run, phase: str) -> float:
    """The time left, less a save's reserve for each phase left, split evenly over them."""
    left = run.phases_left()
    return max(0.0, (run.clock.left() - run.save_reserve * left) / max(1, left))


def run_rounds(
    args: argparse.Namespace,
    phases: Sequence[str] | Callable[[Run], Sequence[str]],
    train: Mapping[str, Phase],
    *,
    share: Callable[[Run, str], float] = even_share,
    min_seconds: float = 3.0,
    checkpoint: str = "v{version}",
    label: str = "phase",
) -> int:
    """Run ``phases`` (names of ``train``'s functions, or a function of the run that gives
    them once the submissions left are known) on the budget; returns the exit status.

    ``share(run, phase)`` gives a phase its seconds; a phase that would get less than
    ``min_seconds`` ends the run. ``checkpoint`` names the saved directory under ``output/``
    (fields ``version``, ``phase``); ``label`` names a phase in the log (``phase 1/4: sft``).
    ``args`` holds the :func:`recipe_parser` flags.
    """
    root = workspace()
    client = GraderClient.from_env()
    budget = client.budget()
    clock = Clock.from_budget(budget, args.margin, args.min_margin)
    subs = Submissions(
        client, int(budget.get("max_submissions") or 1) - int(budget.get("submissions_used") or 0)
    )
    log(
        f"budget {budget.get('remaining_s'):.0f}s left, {subs.left()} submissions; "
        f"working until {clock.left():.0f}s from now (margin {clock.margin_s:.0f}s); "
        f"mode {args.mode}, device {device()}"
    )
    model, tokenizer = load_base(root / "models" / "base")
    params = sum(p.numel() for p in model.parameters())
    log(f"loaded base model ({params / 1e6:.1f}M params)")
    run = Run(args, root, clock, subs, model, tokenizer, save_reserve=5.0 + params * 4 / 150e6)
    run.phases = list(phases(run) if callable(phases) else phases)
    for index, phase in enumerate(run.phases):
        run.index = index
        if subs.left() < 1:
            log("no submissions left: stopping")
            break
        seconds = share(run, phase)
        if args.phase_seconds is not None and seconds >= min_seconds:
            seconds = min(seconds, max(min_seconds, args.phase_seconds))
        if seconds < min_seconds:
            log(f"{clock.left():.0f}s left: not enough for another {phase} {label}")
            break
        log(f"{label} {index + 1}/{len(run.phases)}: {phase} for up to {seconds:.0f}s")
        started = time.monotonic()
        run.model, steps = train[phase](run, seconds)
        log(f"{phase}: {steps} steps in {time.monotonic() - started:.0f}s")
        if steps:
            run.version += 1
            save_and_submit(run, checkpoint.format(version=run.version, phase=phase))
    subs.poll()  # no waiting for the last scores: the run ends sooner, the grader finishes
    scored = {i: s for i, s in subs.scores.items() if s is not None}
    if scored:
        best = max(scored, key=lambda i: scored[i])
        log(f"done: best submission {best} with score {scored[best]}")
    else:
        log(f"done: {len(subs.ids)} submission(s), none scored yet (the grader finishes them)")
    return 0


def save_and_submit(run: Run, name: str) -> None:
    """Save the model to ``output/<name>`` (the save's time raises the reserve) and submit it."""
    run.model.eval()
    seconds = save_checkpoint(run.model, run.tokenizer, run.root / "output" / name)
    run.save_reserve = max(run.save_reserve, 1.5 * seconds)
    run.model.train()
    run.subs.submit(f"output/{name}")
    run.subs.poll()
