"""Lockstep batched rollouts vs one episode at a time: same WebShop sessions, same model, one run.

Why: an interactive evaluation is hundreds of short generations, one per step of every episode.
The ``rollout`` evaluator plays ``batch_size`` episodes in lockstep (one batched generation per
turn) and, on a CPU, computes the prompts' shared prefix (rules + worked example) only once.
This measures what each buys on the current machine, with the real evaluator:

1. ``lockstep``: batch ``--batch-size``, prefix cache on (the default configuration);
2. ``one-at-a-time``: batch 1, prefix cache on;
3. ``one-at-a-time, plain``: batch 1, plain ``generate`` (no prefix cache): the naive loop.

    .venv/bin/python bench/rollout_throughput.py                        # tiny, 32 sessions, compact
    .venv/bin/python bench/rollout_throughput.py --model smollm2-135m --sessions 8
    .venv/bin/python bench/rollout_throughput.py --prompt react         # the reference prompt

Greedy decoding: every mode must play the same actions; the script says whether they did.
The model comes from the registry (``autorl list model``), materialised into
``$AUTORL_CACHE/models``; the sessions are the first ``--sessions`` eval sessions of the WebShop
task prepared as a run prepares it (offline catalogue, ``--prompt`` style, ``--max-steps``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchlib import registry_model, write_json


def prepared_webshop(cache: Path, prompt: str, max_steps: int) -> Any:
    """WebShop as a run prepares it (offline catalogue): eval split and evaluator config."""
    from autorl_task_webshop.task import WebShopTask

    from autorl.types import TaskContext

    options = {"prompt": prompt, "max_steps": max_steps}
    return WebShopTask().prepare(TaskContext(cache_dir=cache, options=options))


def play(model_dir: Path, prepared: Any, work: Path, **config: Any) -> dict[str, Any]:
    from autorl_evaluator_rollout.evaluator import RolloutEvaluator

    from autorl.contracts import load_contract
    from autorl.types import EvalRequest

    result = RolloutEvaluator().evaluate(
        EvalRequest(
            model_dir=model_dir,
            eval_path=prepared.eval_path,
            config={**prepared.evaluator_config, **config},
            work_dir=work,
            contract=load_contract("interactive", prepared.contract),
        )
    )
    actions = [json.loads(line)["actions"] for line in result.details_path.read_text().splitlines()]
    return {"score": result.score, "metrics": dict(result.metrics), "actions": actions}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny", help="registry model name (default: tiny)")
    parser.add_argument("--sessions", type=int, default=32, help="eval sessions (default 32)")
    parser.add_argument("--batch-size", type=int, default=16, help="lockstep batch (16)")
    parser.add_argument("--max-new-tokens", type=int, default=48, help="per reply (48)")
    parser.add_argument("--max-steps", type=int, default=10, help="per episode (10)")
    parser.add_argument(
        "--prompt",
        choices=("compact", "react"),
        default="compact",
        help="the task's prompt style: compact (offline default, ~280 tokens a step) or react "
        "(the reference's one-shot ReAct prompt, ~1,000)",
    )
    parser.add_argument("--device", default="auto")
    parser.add_argument("--skip-plain", action="store_true", help="skip the plain baseline")
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args(argv)

    model_path = registry_model(args.model)
    if model_path is None:
        return 2
    common = {"max_new_tokens": args.max_new_tokens, "limit": args.sessions, "device": args.device}
    modes = {
        "lockstep": {"batch_size": args.batch_size, "prefix_cache": True},
        "one-at-a-time": {"batch_size": 1, "prefix_cache": True},
        "one-at-a-time, plain": {"batch_size": 1, "prefix_cache": False},
    }
    if args.skip_plain:
        del modes["one-at-a-time, plain"]
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rollout-bench-") as tmp:
        prepared = prepared_webshop(Path(tmp) / "task", args.prompt, args.max_steps)
        for name, extra in modes.items():
            print(
                f"{name}: batch {extra['batch_size']}, prefix cache {extra['prefix_cache']}...",
                flush=True,
            )
            results[name] = play(model_path, prepared, Path(tmp) / name, **common, **extra)
    first = results["lockstep"]
    print(
        f"\nmodel {args.model}, {args.sessions} WebShop eval sessions ({args.prompt} prompt), "
        f"max {args.max_steps} steps, {args.max_new_tokens} new tokens per reply, greedy"
    )
    print(
        f"{'mode':<22} {'batch':>5} {'episodes/s':>11} {'seconds':>8} {'turns':>6} "
        f"{'tokens':>7} {'success':>8}"
    )
    for name, result in results.items():
        m = result["metrics"]
        print(
            f"{name:<22} {modes[name]['batch_size']:>5} {m['episodes_per_second']:>11.3f} "
            f"{m['seconds']:>8.1f} {m['turns']:>6} {m['generated_tokens']:>7} "
            f"{result['score']:>7.1f}%"
        )
    summary: dict[str, Any] = {
        "model": args.model,
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
        summary[f"speedup_vs_{name}"] = round(ratio, 2)
        summary[f"same_actions_as_{name}"] = same
        print(f"lockstep vs {name}: {ratio:.1f}x episodes/s; same actions: {same}")
    write_json(args.json, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
