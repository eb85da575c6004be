"""What isolation costs: sandbox start-up and a whole tiny run, per sandbox, as ratios to ``local``.

Start-up: from ``sandbox.start()`` to the agent's first output line (the agent runtime's
Python printing one line), median of ``--starts``; when root, with a memory and a pids limit
as a run has by default (a cgroup and, in ``isolated``, its reaper process). Run: ``autorl run
--model tiny`` on a small gsm8k split with the scripted agent (same seed and budget in every
sandbox), wall time of the whole run, median of ``--runs``. Sandboxes that cannot run here (no
bubblewrap, no Docker engine) are reported as skipped with the reason, never silently
replaced.

    python bench/sandbox_overhead.py [--sandboxes local,isolated,docker] [--no-limits] [--json F]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import write_json

from autorl.types import Limits

RUN_LIMITS = Limits(memory_bytes=8 * 1024**3, pids=4096)
"""Limits like a run's ``[limits]`` defaults (pids 4096, memory 75 % of the machine): the
start-up pays for the cgroup, not for its values."""

AUTORL = str(Path(sys.executable).parent / "autorl")


def start_seconds(name: str, starts: int, workdir: Path, limits: Limits) -> list[float]:
    from autorl_sandbox_common.runtime import build_runtime

    from autorl.registry import get_registry
    from autorl.types import AgentLaunch, SandboxRequest

    sandbox = get_registry().create("sandbox", name)
    sandbox.check()
    runtime = build_runtime()
    times = []
    for i in range(starts):
        run = workdir / f"{name}-{i}"
        (run / "workspace").mkdir(parents=True)
        log = run / "agent.log"
        request = SandboxRequest(
            launch=AgentLaunch(argv=(str(runtime.python), "-c", "print('up', flush=True)")),
            workspace=run / "workspace",
            home=run / "home",
            log_path=log,
            state_dir=run / "sandbox",
            read_only=runtime.read_only,
            limits=limits,
            run_id=f"bench-{i}",
        )
        started = time.monotonic()
        proc = sandbox.start(request)
        while "up" not in (log.read_text() if log.exists() else ""):
            if time.monotonic() - started > 120:
                raise RuntimeError(f"sandbox {name}: no output in 120 s")
            time.sleep(0.005)
        times.append(time.monotonic() - started)
        proc.wait(60)
        proc.terminate()
    return times


def run_seconds(name: str, runs: int, workdir: Path, budget: str) -> list[float]:
    times = []
    for i in range(-1, runs):  # run -1 warms the caches (baseline, runtime); not timed
        argv = [
            AUTORL, "run", "--model", "tiny", "--task", "gsm8k", "--sandbox", name,
            "--budget", budget, "--task-option", "train_size=40", "--task-option",
            "eval_size=20", "--runs-dir", str(workdir / "runs"), "--run-id", f"{name}-{i + 1}",
            "--quiet",
        ]  # fmt: skip
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"autorl run in {name} failed:\n{done.stdout}\n{done.stderr}")
        times.append(time.monotonic() - started)
    return times


@contextlib.contextmanager
def docker_engine() -> Any:
    """A Docker daemon for the docker sandbox: the running one, else a private one (no
    bridge) for the bench's duration; without one, docker is reported as skipped."""
    try:
        from autorl_sandbox_docker.testing import EngineUnavailable, engine
    except ImportError:
        yield None
        return
    try:
        with engine() as host:
            yield host
    except EngineUnavailable:
        yield None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sandboxes", default="local,isolated,docker")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--budget", default="45")
    parser.add_argument("--no-runs", action="store_true", help="start-up only")
    parser.add_argument("--no-limits", action="store_true", help="start without a cgroup")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from autorl.errors import AutorlError

    limited = not args.no_limits and os.geteuid() == 0
    limits = RUN_LIMITS if limited else Limits()
    print(f"start-up {'with' if limited else 'without'} a run's resource limits")
    summary: dict[str, Any] = {"sandboxes": {}, "start_with_limits": limited}
    with contextlib.ExitStack() as stack:
        if "docker" in args.sandboxes.split(","):
            stack.enter_context(docker_engine())
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="autorl-bench-"))
        workdir = Path(tmp)
        for name in args.sandboxes.split(","):
            row: dict[str, Any] = {}
            try:
                starts = start_seconds(name, args.starts, workdir, limits)
                row["start_s"] = statistics.median(starts)
                if not args.no_runs:
                    row["run_s"] = statistics.median(
                        run_seconds(name, args.runs, workdir, args.budget)
                    )
            except AutorlError as exc:
                row = {"skipped": exc.message}
            summary["sandboxes"][name] = row
    base = summary["sandboxes"].get("local", {})
    print(f"{'sandbox':<10} {'start-up':>10} {'x local':>8} {'tiny run':>10} {'x local':>8}")
    for name, row in summary["sandboxes"].items():
        if "skipped" in row:
            print(f"{name:<10} skipped: {row['skipped']}")
            continue
        for key in ("start_s", "run_s"):
            if key in row and base.get(key):
                row[key.replace("_s", "_ratio")] = row[key] / base[key]
        print(
            f"{name:<10} {row['start_s']:>9.3f}s {row.get('start_ratio', float('nan')):>7.2f}x"
            f" {row.get('run_s', float('nan')):>9.1f}s {row.get('run_ratio', float('nan')):>7.2f}x"
        )
    write_json(args.json, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
