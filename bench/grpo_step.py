"""A GRPO step of the interactive recipe vs TRL's ``GRPOTrainer`` on the same model and prompts.

Why: the recipe writes its own online GRPO loop (an episode needs the environment between
turns, which TRL's single-turn trainer does not do) and claims it is fast because each rollout
prompt is prefilled once, shared heads once, and the loss step reuses the rollout's keys and
values. This times, in one run, on the same SmolLM2 + LoRA r 16, the same first-turn WebShop
prompts (the grader's compact prompt, train sessions), the same group size and reply length:

- ``recipe, one turn``: ``interactive.play(max_steps=1)`` + ``policy_loss_step`` (one
  iteration), the like-for-like peer of TRL's single-turn step;
- ``TRL GRPOTrainer``: the same prompts and group size, ``beta=0`` (no reference model), one
  iteration, a reward of 1 for a reply with a parsable action (the recipe's steps are timed
  with the environment's reward; both spend nothing measurable on the reward);
- ``recipe, whole episodes``: the real step (up to the grader's 8 turns), for scale;
- ``whole episodes on vLLM`` (``--ways ...,vllm``): the same step with ``--rollout-engine vllm``
  (the recipe's own vLLM server from the engine build, ``autorl engine prepare``, serving each
  step's LoRA adapter: ``engine_rollouts.py``); its start is timed apart, each step includes the
  adapter's hand-over.

    .venv/bin/python bench/grpo_step.py                  # smollm2-135m, 2 sessions x 4, 3 steps
    .venv/bin/python bench/grpo_step.py --model tiny --steps 2
    .venv/bin/python bench/grpo_step.py --ways episodes,vllm   # issue #33 item 4
"""

from __future__ import annotations

import argparse
import atexit
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import bench_parser, parse_model_args, report_medians

RECIPES = Path(__file__).resolve().parents[1] / (
    "plugins-agents/autorl-agent-scripted/src/autorl_agent_scripted/recipes"
)


def webshop_kit() -> Any:
    from autorl_task_webshop.task import WebShopTask

    from autorl.types import TaskContext

    tmp = Path(tempfile.mkdtemp(prefix="grpo-bench-"))
    atexit.register(shutil.rmtree, tmp, True)  # the kit is imported from it until the end
    kit_dir = WebShopTask().prepare(TaskContext(cache_dir=tmp, options={})).kit_dir
    sys.path[:0] = [str(kit_dir), str(RECIPES / "common")]
    import autorl_kit as kit

    return kit


def recipe_steps(
    model_path: Path,
    kit: Any,
    sessions: list[list[str]],
    group: int,
    tokens: int,
    turns: int,
    engine: Any = None,
) -> list[float]:
    """Seconds of each recipe step (rollouts of ``turns`` at most + one update); with
    ``engine`` (a started :class:`engine_rollouts.PolicyEngine`), rolled out on it."""
    import interactive
    import torch
    from autorl_hf.loading import load_model

    model, tokenizer = load_model(model_path, device="cpu")
    model = interactive.with_adapter(model, argparse.Namespace(mode="lora", lora_r=16))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    times = []
    for step, chosen in enumerate(sessions):
        started = time.perf_counter()
        if engine is not None:
            engine.use(model)
        episodes = interactive.play(
            model, tokenizer, kit, chosen, group_size=group, temperature=1.0,
            max_new_tokens=tokens, max_steps=turns, engine=engine, seed=step,
        )  # fmt: skip
        advs = interactive.advantages(episodes)
        if not any(advs):  # no signal: train on every turn anyway, so the update is timed
            advs = [1.0 if i % 2 else -1.0 for i in range(len(episodes))]
        interactive.policy_loss_step(model, optimizer, episodes, advs, iterations=1)
        times.append(time.perf_counter() - started)
    return times


def vllm_steps(
    model_path: Path, kit: Any, sessions: list[list[str]], group: int, tokens: int, turns: int
) -> tuple[list[float], float]:
    """:func:`recipe_steps` on the recipe's own vLLM server; and the server's start seconds."""
    import engine_rollouts
    from autorl_hf.engine.env import require_engine
    from autorl_hf.loading import load_model

    os.environ[engine_rollouts.ENGINE_ENV] = str(require_engine().python)
    model, tokenizer = load_model(model_path, device="cpu")
    scratch = Path(tempfile.mkdtemp(prefix="grpo-bench-engine-"))
    atexit.register(shutil.rmtree, scratch, True)
    engine = engine_rollouts.start_for(model, tokenizer, scratch=scratch, lora_rank=16, seed=0)
    del model
    try:
        return recipe_steps(model_path, kit, sessions, group, tokens, turns, engine), (
            engine.startup_s
        )
    finally:
        engine.close()


def trl_steps(
    model_path: Path, kit: Any, sessions: list[list[str]], group: int, tokens: int
) -> list[float]:
    """Seconds of each ``GRPOTrainer`` step on the sessions' first-turn prompts."""
    import interactive
    from autorl_hf.loading import load_model
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    model, tokenizer = load_model(model_path, device="cpu")
    tokenizer.padding_side = "left"
    rows = []
    for chosen in sessions:
        for session_id in chosen:
            env = kit.make_env()
            observation, _ = env.reset(session_id)
            rows.append({"prompt": kit.build_messages([observation], [], kit.HISTORY_WINDOW)})

    def parsable(completions: list[Any], **_: Any) -> list[float]:
        return [1.0 if kit.extract_action(c[0]["content"]) else 0.0 for c in completions]

    class Clock(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.began = 0.0

        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self.began = time.perf_counter()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            self.times.append(time.perf_counter() - self.began)

    clock = Clock()
    per_step = len(sessions[0]) * group
    output_dir = tempfile.mkdtemp(prefix="grpo-bench-trl-")
    atexit.register(shutil.rmtree, output_dir, True)
    config = GRPOConfig(
        output_dir=output_dir,
        per_device_train_batch_size=per_step,
        num_generations=group,
        max_completion_length=tokens,
        max_steps=len(sessions),
        learning_rate=1e-4,
        beta=0.0,
        temperature=1.0,
        use_cpu=True,
        bf16=False,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        shuffle_dataset=False,
        gradient_checkpointing=False,
        dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[parsable],
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=interactive.lora_config(16),
        callbacks=[clock],
    )
    trainer.train()
    return clock.times


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, "smollm2-135m")
    parser.add_argument("--sessions", type=int, default=2, help="sessions per step (2)")
    parser.add_argument("--group", type=int, default=4, help="episodes per session (4)")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per way (3)")
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument(
        "--ways",
        default="turn,trl,episodes",
        help="comma-separated, of: turn (recipe, one turn), trl, episodes (recipe, whole "
        "episodes), vllm (whole episodes on vLLM); default turn,trl,episodes",
    )
    args, model_path = parse_model_args(parser, argv)
    if model_path is None:
        return 2
    kit = webshop_kit()
    ids = kit.train_ids()
    random.Random(args.seed).shuffle(ids)
    warm = [ids[: args.sessions]]  # first step of each way: imports, allocator, thread start-up
    sessions = [ids[(i + 1) * args.sessions : (i + 2) * args.sessions] for i in range(args.steps)]
    shape = (kit, warm + sessions, args.group, args.max_new_tokens)
    ways = {w.strip() for w in args.ways.split(",") if w.strip()}
    unknown = ways - {"turn", "trl", "episodes", "vllm"}
    if unknown or not ways:
        print(f"--ways: unknown {', '.join(sorted(unknown)) or '(none given)'}", file=sys.stderr)
        return 2
    times: dict[str, list[float]] = {}
    started = None

    def done(name: str, steps: list[float]) -> None:
        times[name] = steps[1:]  # the first step of each way warms up
        print(f"{name}: {', '.join(f'{t:.1f}' for t in steps[1:])} s a step", flush=True)

    if "turn" in ways:
        done("recipe, one turn", recipe_steps(model_path, *shape, turns=1))
    if "trl" in ways:
        done("TRL GRPOTrainer", trl_steps(model_path, *shape))
    if "episodes" in ways:
        done("recipe, whole episodes", recipe_steps(model_path, *shape, kit.MAX_STEPS))
    if "vllm" in ways:
        steps, started = vllm_steps(model_path, *shape, kit.MAX_STEPS)
        done("whole episodes on vLLM", steps)
    print(
        f"model {args.model}, LoRA r 16, {args.sessions} WebShop sessions x {args.group} "
        f"episodes a step, at most {args.max_new_tokens} new tokens, {args.steps} timed steps"
    )
    pairs = [
        ("TRL GRPOTrainer", "recipe, one turn", "recipe vs TRL GRPOTrainer (one turn)"),
        ("recipe, whole episodes", "whole episodes on vLLM", "vLLM rollouts vs lockstep"),
    ]
    for slow, fast, what in pairs:
        if slow in times and fast in times:
            ratio = report_medians(times, slow, fast, args.json, digits=1)
            print(f"{what} (same sessions, group and tokens): {ratio:.2f}x (over 1: faster)")
            break
    else:
        report_medians(times, next(iter(times)), next(iter(times)), args.json, digits=1)
    if started is not None:
        print(f"vLLM server start (once per GRPO phase): {started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
