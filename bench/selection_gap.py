"""The selection gap (#31), measured and simulated.

Why: the reference protocol reports the best of k noisy scores on one held-out split, which is
biased upward by selection alone; the sealed protocol reports the selected checkpoint's score
on a test split it was not selected on. This prints both halves of the argument:

1. ``simulate``: E[max of k independent evaluations] - p, in points, for k equally good
   checkpoints of true score p, on a split of n examples (exact over the binomial, no sampling):
   the upper bound of the reference protocol's inflation (real checkpoints are correlated), for
   the held-out sizes of today and the dev sizes the sealed split leaves;
2. ``measured``: for each RUN_DIR (a run kept with ``--keep-checkpoints``: one route's
   checkpoints at several points, e.g. the scripted agent's SFT then GRPO submissions), every
   scored submission on the run's sealed test split with the task's evaluator; per task the
   dev-best checkpoint's dev score minus its test score (the selection gap), the test score of
   the best on test (the oracle), and the mean dev - test over all checkpoints (the split's own
   difference, which selection does not cause).

    .venv/bin/python bench/selection_gap.py --simulate-only
    .venv/bin/autorl run --task gsm8k --model tiny --keep-checkpoints --run-id sel
    .venv/bin/python bench/selection_gap.py runs/sel --json gap.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from benchlib import write_json

KS = (1, 2, 4, 8, 16)
PS = (0.5, 0.2)
SIZES = (20, 25, 40, 41, 50, 67, 100)
"""Today's default held-out sizes (40 WebShop/ALFWorld offline, 50 GSM8K offline, 100
DeepSearchQA) and the dev sizes the default 0.5 share leaves (20, 25, 41 HumanEval, 50, 67
ALFWorld official)."""


def expected_max_gap(n: int, p: float, k: int) -> float:
    """E[max of k Binomial(n, p) / n] - p, in points: exact, from P(max <= x) = F(x)^k."""
    pmf = [math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(n + 1)]
    cdf, total, mean = 0.0, 0.0, 0.0
    for x, mass in enumerate(pmf):
        previous = cdf**k
        cdf = min(1.0, cdf + mass)
        mean += x * (cdf**k - previous)
        total += cdf**k - previous
    return 100 * (mean / total / n - p)


def simulate(sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    table = {
        str(n): {str(p): {str(k): round(expected_max_gap(n, p, k), 2) for k in KS} for p in PS}
        for n in sizes
    }
    print("E[max of k] - p, points (k equally good checkpoints, independent evaluation noise)")
    print(f"{'n':>5} {'p':>4} " + " ".join(f"{'k=' + str(k):>7}" for k in KS))
    for n in sizes:
        for p in PS:
            row = table[str(n)][str(p)]
            print(f"{n:>5} {p:>4} " + " ".join(f"{row[str(k)]:>+7.1f}" for k in KS))
    return table


def _scored(run_dir: Path) -> dict[int, dict[str, Any]]:
    merged: dict[int, dict[str, Any]] = {}
    for line in (run_dir / "submissions.jsonl").read_text().splitlines():
        entry = json.loads(line)
        merged.setdefault(entry["submission_id"], {}).update(entry)
    return {s: e for s, e in merged.items() if e.get("status") == "scored"}


def measure(run_dir: Path) -> dict[str, Any]:
    """Every scored checkpoint of one kept run on its sealed test split."""
    from autorl_runner.console import RunConsole
    from autorl_runner.scoring import score_se
    from autorl_runner.setup import prepare, resolve

    from autorl.config import RunConfig
    from autorl.registry import get_registry
    from autorl.types import EvalRequest

    manifest = json.loads((run_dir / "manifest.json").read_text())
    config = RunConfig.model_validate(
        {**manifest["config"], "run_id": run_dir.name, "runs_dir": run_dir.parent}
    )
    if config.scoring.protocol != "sealed":
        raise SystemExit(f"{run_dir}: a {config.scoring.protocol} run has no sealed split")
    registry = get_registry()
    parts = resolve(config, registry)
    with RunConsole(quiet=True) as console:
        setup = prepare(config, registry, parts, console, run_dir)
    rows = []
    for sid, entry in sorted(_scored(run_dir).items()):
        graded = run_dir / "submissions" / str(sid) / "graded"
        if entry.get("copy_of_base") or not graded.is_dir():
            continue
        result = setup.evaluator.evaluate(
            EvalRequest(
                model_dir=graded,
                eval_path=setup.prepared.test_path,
                config=setup.evaluator_config,
                work_dir=run_dir / "bench-selection" / str(sid),
                seed=config.seed,
                contract=setup.contract,
                base_model_dir=setup.model_info.path,
            )
        )
        test = {"score": result.score, "n": result.n, "metrics": dict(result.metrics)}
        rows.append(
            {
                "submission_id": sid,
                "dev": entry["score"],
                "dev_n": entry.get("n"),
                "test": round(float(result.score), 4),
                "test_n": result.n,
                "test_se": score_se(test),
            }
        )
    if not rows:
        raise SystemExit(f"{run_dir}: no kept scored checkpoint (run it with --keep-checkpoints)")
    best_dev = max(rows, key=lambda r: (r["dev"], r["submission_id"]))
    best_test = max(rows, key=lambda r: (r["test"], r["submission_id"]))
    mean_diff = sum(r["dev"] - r["test"] for r in rows) / len(rows)
    summary = {
        "run": run_dir.name,
        "task": config.task,
        "model": config.model,
        "checkpoints": rows,
        "dev_best": best_dev["dev"],
        "dev_best_on_test": best_dev["test"],
        "selection_gap": round(best_dev["dev"] - best_dev["test"], 2),
        "oracle_test": best_test["test"],
        "oracle_gap": round(best_test["test"] - best_dev["test"], 2),
        "mean_dev_minus_test": round(mean_diff, 2),
    }
    print(
        f"{config.task} ({run_dir.name}, {config.model}): {len(rows)} checkpoints; dev best "
        f"{best_dev['dev']:.1f} (submission {best_dev['submission_id']}) -> test "
        f"{best_dev['test']:.1f}: selection gap {summary['selection_gap']:+.1f}; best on test "
        f"{best_test['test']:.1f}; mean dev - test {mean_diff:+.1f}"
    )
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=Path, help="kept sealed run directories")
    parser.add_argument("--simulate-only", action="store_true")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args(argv)
    summary: dict[str, Any] = {"simulation": simulate()}
    if not args.simulate_only:
        if not args.runs:
            parser.error("give RUN_DIR(s) kept with --keep-checkpoints, or --simulate-only")
        summary["measured"] = [measure(run) for run in args.runs]
    write_json(args.json, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
