"""The evaluation's noise: one checkpoint scored again under other session orders and seeds.

Why: "best minus baseline" means something only against the spread of the score when nothing
about the model changes. This plays the same checkpoint on the same eval split of an
interactive task with the real ``rollout`` evaluator, several times:

1. ``order``: greedy decoding, sessions in an order shuffled by ``order_seed`` (other lockstep
   batches, other padding): what the evaluation itself adds;
2. ``sampled``: ``--temperature`` > 0 with other seeds: how far one sampled replay of the same
   policy strays;

and prints each score, their spread (max - min, standard deviation) and the binomial standard
error of the greedy success rate over the split's sessions (the noise of which sessions happen
to be in the split, which no rerun shows).

    .venv/bin/python bench/eval_noise.py runs/<id>/submissions/1/checkpoint --orders 3
    .venv/bin/python bench/eval_noise.py smollm2-135m --task webshop --orders 2 --samples 2

CHECKPOINT is a model directory or a registry model name (``autorl list model``). The task is
prepared as a run prepares it (offline data, its default options unless ``--option k=v``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchlib import registry_model, rollout_eval, write_json


def prepared_task(task: str, options: dict[str, Any]) -> Any:
    from autorl.paths import cache_dir
    from autorl.registry import get_registry
    from autorl.types import TaskContext

    plugin = get_registry().create("task", task)
    cache = cache_dir("tasks", task, str(getattr(plugin, "version", "0")))
    return plugin.prepare(TaskContext(cache_dir=cache, options=options))


def score(model: Path, prepared: Any, work: Path, seed: int, **config: Any) -> dict[str, Any]:
    result = rollout_eval(model, prepared, work, seed, **config)
    return {"score": result.score, "metrics": dict(result.metrics)}


def parse_option(text: str) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="model directory or registry model name")
    parser.add_argument("--task", default="webshop", help="an interactive task (webshop)")
    parser.add_argument("--option", action="append", default=[], help="task option k=v")
    parser.add_argument("--orders", type=int, default=3, help="greedy runs, shuffled orders (3)")
    parser.add_argument("--samples", type=int, default=0, help="sampled runs (0)")
    parser.add_argument("--temperature", type=float, default=0.7, help="for --samples (0.7)")
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args(argv)

    from autorl.errors import AutorlError

    model = Path(args.checkpoint)
    if not model.is_dir():
        found = registry_model(args.checkpoint)
        if found is None:
            return 2
        model = found
    try:
        prepared = prepared_task(args.task, dict(map(parse_option, args.option)))
    except AutorlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if prepared.evaluator != "rollout":
        print(f"error: task {args.task} is not scored by the rollout evaluator", file=sys.stderr)
        return 2
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="eval-noise-") as tmp:
        plan = [("order", None, i, 0.0) for i in range(args.orders)]
        plan += [("sampled", i, None, args.temperature) for i in range(args.samples)]
        for kind, seed, order, temperature in plan:
            label = f"{kind} {order if seed is None else seed}"
            print(f"{label}...", flush=True)
            result = score(
                model,
                prepared,
                Path(tmp) / label.replace(" ", "-"),
                seed=seed or 0,
                order_seed=order,
                temperature=temperature,
            )
            runs.append({"kind": kind, "label": label, **result})
    n = runs[0]["metrics"]["n_episodes"]
    print(f"\n{model} on {args.task} ({prepared.split}, {n} sessions)")
    print(f"{'run':<12} {'score':>7} {'mean reward':>12} {'seconds':>8}")
    for run in runs:
        m = run["metrics"]
        print(
            f"{run['label']:<12} {run['score']:>6.1f}% {m['mean_reward']:>12.3f} "
            f"{m['seconds']:>8.1f}"
        )
    summary: dict[str, Any] = {"checkpoint": str(model), "task": args.task, "runs": runs}
    for kind in ("order", "sampled"):
        scores = [r["score"] for r in runs if r["kind"] == kind]
        if not scores:
            continue
        spread = max(scores) - min(scores)
        std = statistics.pstdev(scores)
        summary[kind] = {"mean": statistics.fmean(scores), "spread": spread, "std": std}
        print(f"{kind}: mean {statistics.fmean(scores):.1f}, spread {spread:.1f}, std {std:.1f}")
    se = runs[0]["metrics"]["score_se"] if args.orders else None
    if se is not None:
        summary["binomial_se"] = se
        print(f"binomial SE of the greedy success rate: {se:.1f} points")
    write_json(args.json, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
