"""One cell's job: an ``autorl run`` in a child process, wherever the executor runs it.

A child process per cell keeps cells apart (each run has its own engine, signal handlers,
gateway and sandbox) and lets any executor run it: a pool thread, a Ray worker on another node.
The job is a module-level function of plain data, so it pickles. On Linux the child gets
SIGTERM if its launcher dies (``PR_SET_PDEATHSIG``): killing a campaign stops its runs, which
record themselves as interrupted, instead of leaving orphans that outlive it.

The moment the child starts, the job writes ``logs/<run id>.child.json`` (its pid, start time,
host, run directory): the campaign marks the cell ``running`` from it, and ``autorl campaign
status`` checks from it that the run still lives (:mod:`autorl_campaign.liveness`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.executors import Placement
from autorl_campaign.liveness import child_path, write_child

LOG_TAIL = 4000
STOP_GRACE_S = 60.0
"""How long a stopped cell's run may take to record itself (stop the agent, write run.json and
the report) before it is killed."""

_CHILDREN: set[subprocess.Popen[bytes]] = set()
_CHILDREN_LOCK = threading.Lock()
_STOPPING = threading.Event()
"""Set by :func:`stop_children`: a job that starts its child after it stops it at once."""


def allow_starts() -> None:
    """A campaign starting in this process: cells may start children again."""
    _STOPPING.clear()


def stop_children() -> int:
    """SIGTERM every cell's child running in this process (a campaign being stopped): each run
    stops its agent and records itself ``interrupted``; the jobs then return as usual. A job
    that starts its child after this stops it at once. Safe in a signal handler (no waiting).
    Returns how many were signalled."""
    _STOPPING.set()
    with _CHILDREN_LOCK:
        children = list(_CHILDREN)
    for proc in children:
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.send_signal(signal.SIGTERM)
    return len(children)


@dataclass(frozen=True)
class CellJob:
    """What a worker needs to run one cell (plain data: it crosses process boundaries)."""

    cell_id: str
    run_id: str
    config: dict[str, Any]
    runs_dir: str
    logs_dir: str
    grader_gpus: int = 0
    """How many of the placement's GPUs (the last ones) are the grader's, not the agent's."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _fresh_run_id(job: CellJob, logs: Path) -> str:
    """The job's run id, or ``<id>.2``, ``<id>.3``... when an executor runs the same job again
    (Ray retries a job whose worker died): an earlier try's directory is never reused."""
    run_id, n = job.run_id, 1
    while (Path(job.runs_dir) / run_id).exists() or (logs / f"{run_id}.log").exists():
        n += 1
        run_id = f"{job.run_id}.{n}"
    return run_id


def assign_gpus(
    config: dict[str, Any], env: dict[str, str], gpus: tuple[int, ...], grader_gpus: int
) -> None:
    """The agent's sandbox shows it the placement's first GPUs, the grader evaluates on the
    last ``grader_gpus``; the harness sees all of them. (A campaign file that gave the agent
    GPUs and the grader none, without ``device = "cpu"``, was refused before any cell.)"""
    split = len(gpus) - grader_gpus
    config["limits"] = {**config.get("limits", {}), "gpus": list(gpus[:split])}
    config["grader"] = {**config.get("grader", {}), "gpus": list(gpus[split:])}
    env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)


def run_cell(job: CellJob, placement: Placement) -> dict[str, Any]:
    """Run the cell; return where its run is, its exit code and the tail of its output."""
    config = dict(job.config)
    labels = config.get("labels") or {}
    env = {
        **os.environ,
        "AUTORL_CAMPAIGN_ID": str(labels.get("campaign", "")),
        "AUTORL_CAMPAIGN_CELL": job.cell_id,
    }  # for observers (MLflow tags); the agent's environment is built apart
    if placement.cpus:
        # cells beside each other share the cores: each uses what it holds, harness and agent
        # (OMP_NUM_THREADS reaches the agent; limits.cpus caps its processes' CPU time)
        env.setdefault("OMP_NUM_THREADS", str(max(1, int(placement.cpus))))
        limits = config.get("limits") or {}
        if limits.get("cpus") is None:
            config["limits"] = {**limits, "cpus": placement.cpus}
    if placement.gpus:
        assign_gpus(config, env, placement.gpus, job.grader_gpus)
    logs = Path(job.logs_dir)
    logs.mkdir(parents=True, exist_ok=True)
    run_id = _fresh_run_id(job, logs)
    config_path = logs / f"{run_id}.yaml"
    config_path.write_text(json.dumps(config, indent=1), encoding="utf-8")  # JSON is YAML
    log_path = logs / f"{run_id}.log"
    argv = [
        sys.executable,
        "-m",
        "autorl",
        "run",
        "--config",
        str(config_path),
        "--runs-dir",
        job.runs_dir,
        "--run-id",
        run_id,
        "--quiet",
    ]
    started = time.time()
    run_dir = str(Path(job.runs_dir) / run_id)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # its own process group: a Ctrl-C at the terminal reaches the campaign, which stops
            # each run with SIGTERM (one signal, one way), not the runs behind its back
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            env=env,
        )
        with _CHILDREN_LOCK:
            _CHILDREN.add(proc)
        if _STOPPING.is_set():  # the campaign was stopped while this job was starting
            proc.send_signal(signal.SIGTERM)
        try:
            write_child(child_path(logs, job.run_id), run_id, run_dir, proc.pid, _iso(started))
            code = proc.wait()
        except BaseException:
            proc.terminate()
            try:
                proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
        finally:
            with _CHILDREN_LOCK:
                _CHILDREN.discard(proc)
    output = log_path.read_text(encoding="utf-8", errors="replace")
    return {
        "run_id": run_id,
        "run_dir": run_dir,
        "returncode": code,
        "seconds": round(time.time() - started, 2),
        "ended": _iso(time.time()),
        "log": str(log_path),
        "tail": output[-LOG_TAIL:],
        "worker": placement.worker,
    }


def _iso(epoch: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
