"""What the RL phase added: v2 (after GRPO) minus v1 (after SFT), paired over the held-out
sessions, per seed and over seeds (issue #33 item 8).

Why: a run's report gives each submission's score with its binomial standard error; the gain
of the second over the first is a paired question (both played the same dev sessions), and a
single seed says little. This reads runs whose agent submitted an SFT checkpoint and then a GRPO
one (the scripted agent's interactive recipes: WebShop, ALFWorld, DeepSearchQA), takes each
session's outcome of both evaluations from the run directory (the rollout evaluator's
``submissions/<id>/trajectories.jsonl``, never the workspace), and prints per seed v1, v2 and
the mean paired difference with its standard error (the sessions' differences: sd / sqrt(n)),
then the seeds' mean difference with sqrt(sum SE^2) / k, and whether it clears two SEs.

    .venv/bin/python bench/rl_gain.py runs/sft03-s0 runs/sft03-s1 runs/sft03-s2
    .venv/bin/python bench/rl_gain.py --seeds 0,1,2 --runs-dir /tmp/rl --run-prefix sft03 \\
        --agent-option sft_share=0.3        # runs `autorl run` for each seed first

With ``--seeds``, each seed is a default ``autorl run`` (plus ``--task``, ``--budget`` and the
agent options given), one after the other (a run uses both cores; runs side by side would
shorten each other's training). v1 is the first valid submission, v2 the last; a v2 that is a
duplicate of v1 (the same weights) differs in no session.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchlib import write_json


def outcomes(details: Path) -> dict[str, float]:
    """Each session's success (1.0 or 0.0) from a rollout evaluation's trajectories."""
    found: dict[str, float] = {}
    with details.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            found[str(row["session_id"])] = 1.0 if row["success"] else 0.0
    return found


def submission_outcomes(run_dir: Path, record: Any, sid: int) -> dict[str, float]:
    """The outcomes of submission ``sid`` (of the one it duplicates, for a duplicate)."""
    by_id = {s.submission_id: s for s in record.submissions}
    sub = by_id[sid]
    if sub.status == "duplicate" and sub.duplicate_of is not None:
        return submission_outcomes(run_dir, record, sub.duplicate_of)
    from autorl_evaluator_rollout.evaluator import TRAJECTORIES

    # the details file the submission log names (relative to the run); runs from before it
    # named one: the scorer's work directory of a submission (autorl_runner.scoring)
    recorded = sub.fields.get("details")
    details = run_dir / (recorded or f"submissions/{sid}/{TRAJECTORIES}")
    if not details.is_file():
        raise SystemExit(
            f"{run_dir}: submission {sid} has no {details.name} (not a rollout evaluation?)"
        )
    return outcomes(details)


def paired(run_dir: Path) -> dict[str, Any]:
    """v1, v2 and their paired difference (percentage points) for one run."""
    from autorl_records.records import load_run

    record = load_run(run_dir)
    valid = sorted(s.submission_id for s in record.submissions if s.valid)
    if len(valid) < 2:
        raise SystemExit(
            f"{run_dir}: {len(valid)} valid submission(s); v2 - v1 needs an SFT and a GRPO one"
        )
    first, last = valid[0], valid[-1]
    one = submission_outcomes(run_dir, record, first)
    two = submission_outcomes(run_dir, record, last)
    if set(one) != set(two):
        raise SystemExit(f"{run_dir}: v1 and v2 played different sessions")
    diffs = [100.0 * (two[k] - one[k]) for k in sorted(one)]
    n = len(diffs)
    se = statistics.stdev(diffs) / math.sqrt(n) if n > 1 else float("nan")
    by_id = {s.submission_id: s for s in record.submissions}
    return {
        "run": run_dir.name,
        "seed": record.config.get("seed"),
        "v1": 100.0 * sum(one.values()) / n,
        "v2": 100.0 * sum(two.values()) / n,
        "v2_status": by_id[last].status,
        "diff": sum(diffs) / n,
        "se": se,
        "sessions": n,
        "changed": sum(1 for d in diffs if d),
    }


def pooled(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The seeds' mean difference and its standard error (independent seeds)."""
    k = len(rows)
    mean = sum(r["diff"] for r in rows) / k
    se = math.sqrt(sum(r["se"] ** 2 for r in rows)) / k
    return {"diff": mean, "se": se, "z": mean / se if se > 0 else float("nan")}


def run_seeds(args: argparse.Namespace) -> list[Path]:
    autorl = str(Path(sys.executable).parent / "autorl")
    dirs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        run_id = f"{args.run_prefix}-s{seed}"
        argv = [autorl, "run", "--seed", str(seed), "--runs-dir", str(args.runs_dir)]
        argv += ["--run-id", run_id, "--quiet"]
        if args.task:
            argv += ["--task", args.task]
        if args.budget:
            argv += ["--budget", args.budget]
        for option in args.agent_option:
            argv += ["--agent-option", option]
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True)
        print(f"seed {seed}: exit {done.returncode} in {time.monotonic() - started:.0f} s")
        if done.returncode != 0:
            raise SystemExit(done.stdout[-2000:] + done.stderr[-2000:])
        dirs.append(Path(args.runs_dir) / run_id)
    return dirs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="*", type=Path, help="run directories (or --seeds)")
    p.add_argument("--seeds", help="run `autorl run` for these seeds first (comma-separated)")
    p.add_argument("--runs-dir", type=Path, default=Path("runs"))
    p.add_argument("--run-prefix", default="rl-gain")
    p.add_argument("--task", default=None)
    p.add_argument("--budget", default=None)
    p.add_argument("--agent-option", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--json", type=Path, help="also write the rows and the pooled numbers here")
    args = p.parse_args(argv)
    dirs = list(args.runs) + (run_seeds(args) if args.seeds else [])
    if not dirs:
        p.error("give run directories or --seeds")
    rows = [paired(d) for d in dirs]
    print("| run | seed | v1 (SFT) | v2 (GRPO) | v2 - v1 (paired SE) | sessions changed |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        dup = " (duplicate)" if r["v2_status"] == "duplicate" else ""
        print(
            f"| {r['run']} | {r['seed']} | {r['v1']:.1f} % | {r['v2']:.1f} %{dup} | "
            f"{r['diff']:+.1f} ({r['se']:.1f}) | {r['changed']} of {r['sessions']} |"
        )
    total = pooled(rows)
    verdict = "clears" if total["diff"] > 2 * total["se"] else "does not clear"
    print(
        f"over {len(rows)} seed(s): v2 - v1 = {total['diff']:+.1f} points (SE {total['se']:.1f}); "
        f"{verdict} two standard errors"
    )
    write_json(args.json, {"runs": rows, "pooled": total})
    return 0


if __name__ == "__main__":
    sys.exit(main())
