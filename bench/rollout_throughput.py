"""Lockstep batched rollouts vs one episode at a time: same eval sessions, same model, one run.

Why: an interactive evaluation is hundreds of short generations, one per step of every episode.
The ``rollout`` evaluator plays ``batch_size`` episodes in lockstep (one batched generation per
turn) and, on a CPU, computes the prompts' shared prefix (rules + worked example) only once.
This measures what each buys on the current machine, with the real evaluator:

1. ``lockstep``: batch ``--batch-size``, prefix cache on (the default configuration);
2. ``one-at-a-time``: batch 1, prefix cache on;
3. ``plain``: batch 1, plain ``generate`` (no prefix cache): the naive loop;
4. ``engine``: batch ``--batch-size`` on the vLLM CPU engine in fp32 (its own prefix caching;
   needs ``autorl engine prepare``), its start counted apart (``load_seconds``) and in the
   end-to-end ratio; ``engine-bf16``: the same in bf16 (fast where the host has AMX).

    .venv/bin/python bench/rollout_throughput.py                        # tiny, 32 sessions, compact
    .venv/bin/python bench/rollout_throughput.py --model smollm2-135m --sessions 8
    .venv/bin/python bench/rollout_throughput.py --prompt react         # the reference prompt
    .venv/bin/python bench/rollout_throughput.py --task alfworld --model smollm2-135m \
        --sessions 16 --max-steps 10 --max-new-tokens 40 --modes lockstep
    .venv/bin/python bench/rollout_throughput.py --model smollm2-135m --sessions 40 \
        --modes lockstep,engine                                         # issue #33's bench

Greedy decoding: every mode must play the same actions; the script says whether they did.

The roofline: for the lockstep mode it also prints the model's arithmetic per second (the token
positions it ran, prefill padding included, times two multiply-adds per weight; attention and the
language-model head counted apart) beside this machine's measured fp32 matrix-product throughput
(``torch.mm`` of 2,048-square matrices on the same threads): the fraction says how far from the
limit evaluation runs.
The model comes from the registry (``autorl list model``), materialised into
``$AUTORL_CACHE/models``; the sessions are the first ``--sessions`` eval sessions of the task
(``--task``: WebShop on its offline catalogue in the ``--prompt`` style, or ALFWorld's shipped
held-out games) prepared as a run prepares it, with ``--max-steps``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchlib import registry_model, rollout_eval, write_json


def prepared_webshop(cache: Path, prompt: str, max_steps: int) -> Any:
    """WebShop as a run prepares it (offline catalogue): eval split and evaluator config."""
    from autorl_task_webshop.task import WebShopTask

    from autorl.types import TaskContext

    options = {"prompt": prompt, "max_steps": max_steps}
    return WebShopTask().prepare(TaskContext(cache_dir=cache, options=options))


def prepared_alfworld(cache: Path, sessions: int, max_steps: int) -> Any:
    """ALFWorld's shipped held-out games as a run prepares them (the first ``sessions``)."""
    from autorl_task_alfworld.task import AlfWorldTask

    from autorl.types import TaskContext

    options = {"eval_size": sessions, "max_steps": max_steps}
    return AlfWorldTask().prepare(TaskContext(cache_dir=cache, options=options))


def play(model_dir: Path, prepared: Any, work: Path, **config: Any) -> dict[str, Any]:
    result = rollout_eval(model_dir, prepared, work, **config)
    actions = [json.loads(line)["actions"] for line in result.details_path.read_text().splitlines()]
    return {"score": result.score, "metrics": dict(result.metrics), "actions": actions}


@contextlib.contextmanager
def generation_backend(backend: str | None, precision: str | None = None) -> Iterator[None]:
    """The evaluator's generation backend (``None``: the default) and the engine's precision
    for one mode, restored after; an engine handed back idle is stopped, so the next mode runs
    on a quiet machine."""
    from autorl.config import ENGINE_PRECISION_ENV, GENERATION_BACKEND_ENV

    settings = {GENERATION_BACKEND_ENV: backend, ENGINE_PRECISION_ENV: precision}
    before = {name: os.environ.get(name) for name in settings}
    for name, value in settings.items():
        if value is not None:
            os.environ[name] = value
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if backend is not None:
            from autorl_hf.engine import pool

            pool.close_idle()


def end_to_end(metrics: dict[str, Any]) -> float:
    """An evaluation's seconds with the model's load (or the engine's start)."""
    return float(metrics["seconds"]) + float(metrics.get("load_seconds", 0.0))


def matmul_gflops(seconds: float = 3.0) -> float:
    """This machine's fp32 matrix-product throughput on torch's current threads (GFLOP/s)."""
    import time

    import torch

    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    torch.mm(a, b)  # warm-up
    runs, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        torch.mm(a, b)
        runs += 1
    return 2 * 2048**3 * runs / (time.perf_counter() - started) / 1e9


def model_sizes(model_dir: Path) -> tuple[int, int]:
    """(weights per token position outside the embedding/head, weights of the head)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    head = config.vocab_size * config.hidden_size
    embed = model.get_input_embeddings().weight.numel()
    body = sum(p.numel() for p in model.parameters()) - embed
    if not getattr(config, "tie_word_embeddings", False):
        body -= head  # an untied head is counted apart, like a tied one
    return body, head


def roofline(metrics: dict[str, Any], body: int, head: int, peak: float) -> dict[str, float]:
    """The lockstep evaluation's model arithmetic per second as a fraction of ``peak``."""
    flops = 2 * body * metrics["positions_run"] + 2 * head * metrics["head_positions"]
    achieved = flops / metrics["seconds"] / 1e9
    return {
        "positions_per_second": round(metrics["positions_run"] / metrics["seconds"], 1),
        "model_gflops": round(achieved, 1),
        "matmul_gflops": round(peak, 1),
        "roofline_fraction": round(achieved / peak, 3),
        "prompt_tokens_computed": metrics["prompt_tokens_computed"],
        "prompt_tokens_reused": metrics["prompt_tokens_reused"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny", help="registry model name (default: tiny)")
    parser.add_argument("--task", choices=("webshop", "alfworld"), default="webshop")
    parser.add_argument("--sessions", type=int, default=32, help="eval sessions (default 32)")
    parser.add_argument("--batch-size", type=int, default=16, help="lockstep batch (16)")
    parser.add_argument("--max-new-tokens", type=int, default=48, help="per reply (48)")
    parser.add_argument("--max-steps", type=int, default=10, help="per episode (10)")
    parser.add_argument(
        "--prompt",
        choices=("compact", "react"),
        default="compact",
        help="WebShop's prompt style: compact (offline default, ~280 tokens a step) or react "
        "(the reference's one-shot ReAct prompt, ~1,000)",
    )
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--modes",
        default="lockstep,one-at-a-time,plain",
        help="comma-separated, lockstep first (default: lockstep,one-at-a-time,plain; "
        "engine, engine-bf16: the vLLM CPU engine in fp32, bf16)",
    )
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args(argv)

    model_path = registry_model(args.model)
    if model_path is None:
        return 2
    common = {"max_new_tokens": args.max_new_tokens, "limit": args.sessions, "device": args.device}
    every = {
        "lockstep": {"batch_size": args.batch_size, "prefix_cache": True},
        "one-at-a-time": {"batch_size": 1, "prefix_cache": True},
        "plain": {"batch_size": 1, "prefix_cache": False},
        "engine": {"batch_size": args.batch_size, "prefix_cache": True, "backend": "vllm-cpu"},
        "engine-bf16": {
            "batch_size": args.batch_size,
            "prefix_cache": True,
            "backend": "vllm-cpu",
            "precision": "bf16",
        },
    }
    names = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not names or names[0] != "lockstep" or any(m not in every for m in names):
        print(f"--modes: a comma-separated list starting with lockstep, of {', '.join(every)}")
        return 2
    modes = {name: every[name] for name in names}
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rollout-bench-") as tmp:
        if args.task == "alfworld":
            prepared = prepared_alfworld(Path(tmp) / "task", args.sessions, args.max_steps)
        else:
            prepared = prepared_webshop(Path(tmp) / "task", args.prompt, args.max_steps)
        for name, mode in modes.items():
            extra = {k: v for k, v in mode.items() if k not in ("backend", "precision")}
            print(
                f"{name}: batch {extra['batch_size']}, prefix cache {extra['prefix_cache']}, "
                f"{mode.get('backend', 'transformers')} {mode.get('precision', 'fp32')}...",
                flush=True,
            )
            with generation_backend(mode.get("backend"), mode.get("precision")):
                results[name] = play(model_path, prepared, Path(tmp) / name, **common, **extra)
    first = results["lockstep"]
    print(
        f"\nmodel {args.model}, {args.sessions} {args.task} eval sessions"
        f"{f' ({args.prompt} prompt)' if args.task == 'webshop' else ''}, "
        f"max {args.max_steps} steps, {args.max_new_tokens} new tokens per reply, greedy"
    )
    print(
        f"{'mode':<22} {'batch':>5} {'episodes/s':>11} {'seconds':>8} {'load s':>7} "
        f"{'turns':>6} {'tokens':>7} {'success':>8}"
    )
    for name, result in results.items():
        m = result["metrics"]
        print(
            f"{name:<22} {modes[name]['batch_size']:>5} {m['episodes_per_second']:>11.3f} "
            f"{m['seconds']:>8.1f} {m.get('load_seconds', 0.0):>7.1f} {m['turns']:>6} "
            f"{m['generated_tokens']:>7} {result['score']:>7.1f}%"
        )
    summary: dict[str, Any] = {
        "model": args.model,
        "task": args.task,
        "sessions": args.sessions,
        "batch_size": args.batch_size,
        "max_new_tokens": args.max_new_tokens,
        "max_steps": args.max_steps,
        "prompt": args.prompt,
        "modes": {k: v["metrics"] for k, v in results.items()},
    }
    for name, result in results.items():
        if name == "lockstep":
            continue
        ratio = first["metrics"]["episodes_per_second"] / result["metrics"]["episodes_per_second"]
        same = result["actions"] == first["actions"]
        episodes = sum(a == b for a, b in zip(result["actions"], first["actions"], strict=True))
        summary[f"speedup_vs_{name}"] = round(ratio, 2)
        summary[f"same_actions_as_{name}"] = same
        summary[f"same_episodes_as_{name}"] = episodes
        print(
            f"lockstep vs {name}: {ratio:.1f}x episodes/s; same actions: {same} "
            f"({episodes}/{len(first['actions'])} episodes)"
        )
        if "load_seconds" in result["metrics"]:
            whole = end_to_end(result["metrics"]) / end_to_end(first["metrics"])
            summary[f"end_to_end_vs_{name}"] = round(whole, 2)
            print(f"lockstep vs {name}, load/start included: {whole:.2f}x")
    body, head = model_sizes(model_path)
    line = roofline(first["metrics"], body, head, matmul_gflops())
    summary["roofline"] = line
    print(
        f"roofline (lockstep): {line['positions_per_second']:.0f} token positions/s "
        f"({line['prompt_tokens_computed']} prompt tokens computed, "
        f"{line['prompt_tokens_reused']} reused) = {line['model_gflops']:.1f} GFLOP/s of "
        f"model arithmetic vs {line['matmul_gflops']:.1f} GFLOP/s measured for a large fp32 "
        f"matrix product: {100 * line['roofline_fraction']:.0f}% of the limit"
    )
    write_json(args.json, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
