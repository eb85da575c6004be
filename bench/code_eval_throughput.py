"""Execute HumanEval canonical solutions in the code sandbox: one worker vs a pool.

    python bench/code_eval_throughput.py [--split all|eval] [--workers N]

Prints the wall time of both runs, programs per second and the speed-up; every canonical
solution must pass (a failure means the sandbox breaks correct code).
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    from autorl_evaluator_code.execution import build_program, default_workers, run_programs
    from autorl_evaluator_code.sandbox import Limits
    from autorl_task_humaneval import data

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("all", "eval"), default="all")
    parser.add_argument("--workers", type=int, default=default_workers())
    args = parser.parse_args()

    problems = data.load_problems()
    if args.split == "eval":
        problems = problems[data.N_TRAIN :]
    programs = [
        build_program(p["prompt"] + p["canonical_solution"], p["test"], p["entry_point"])
        for p in problems
    ]
    limits = Limits(timeout_s=20.0)
    times = {}
    for label, workers in (("serial", 1), ("parallel", args.workers)):
        started = time.perf_counter()
        outcomes = run_programs(programs, limits, workers=workers)
        times[label] = time.perf_counter() - started
        failed = [p["task_id"] for p, o in zip(problems, outcomes, strict=True) if not o.passed]
        print(
            f"{label:8s} workers={workers:2d} programs={len(programs)} "
            f"time={times[label]:.2f}s rate={len(programs) / times[label]:.1f}/s "
            f"failed={failed or 'none'}"
        )
    print(f"speed-up parallel/serial: {times['serial'] / times['parallel']:.2f}x")
    flags = outcomes[0].flags
    print("sandbox:", ", ".join(f"{k}={v}" for k, v in flags.items()))


if __name__ == "__main__":
    main()
