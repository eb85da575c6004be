"""Whether a campaign process or a cell's run is still alive, from what they left on disk.

The store says what the campaign process last wrote; after a crash (SIGKILL, a power cut) it
cannot have written the end. What is true is read from the processes and the runs: a cell is
running only while its ``autorl run`` child lives. A pid alone is not enough (pids are reused),
so each process is recorded with its start time (``psutil.Process.create_time``) and its host,
and a pid counts as alive only if a process with that pid exists on this host and started then.

- the campaign process: the store's ``meta`` (``runner_pid``, ``runner_started``,
  ``runner_host``), written when a campaign starts and removed when it ends;
- a cell's child: ``<campaign>/logs/<job run id>.child.json``, written by the job the moment the
  child starts (wherever the executor runs it), with the run's id and directory;
- a run's harness: ``run.json`` says ``running`` with its ``pid`` while the agent runs (the
  heartbeat, rewritten every 5 s), checked the same way against the run's start.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from autorl_records import posix_time

CHILD_SUFFIX = ".child.json"
STALE_HEARTBEAT_S = 60.0
"""A ``running`` run.json not rewritten for this long (it is every 5 s) belongs to a dead
harness; used where its pid cannot be checked (a run on another host)."""


def host() -> str:
    return socket.gethostname()


def this_process() -> dict[str, Any]:
    """This process's identity: pid, start time, host."""
    return {"pid": os.getpid(), "created": psutil.Process().create_time(), "host": host()}


def alive(pid: Any, created: Any, where: Any = None) -> bool | None:
    """True when the process ``pid`` that started at ``created`` still runs; None when that
    cannot be told from here (another host, no pid)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    if where and where != host():
        return None
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        started = proc.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
        return False
    return not isinstance(created, int | float) or abs(started - float(created)) < 1.0


def child_path(logs_dir: Path | str, job_run_id: str) -> Path:
    return Path(logs_dir) / f"{job_run_id}{CHILD_SUFFIX}"


@dataclass(frozen=True)
class Child:
    """A cell's ``autorl run`` process, as its job recorded it when it started."""

    run_id: str
    run_dir: str
    pid: int
    created: float
    host: str
    started: str

    def alive(self) -> bool | None:
        return alive(self.pid, self.created, self.host)


def write_child(path: Path, run_id: str, run_dir: str, pid: int, started: str) -> None:
    """Record a just-started child (atomically: a reader never sees half of it)."""
    try:
        created = psutil.Process(pid).create_time()
    except psutil.Error:
        created = None
    data = {"run_id": run_id, "run_dir": run_dir, "pid": pid, "created": created}
    data.update(host=host(), started=started)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(path)


def read_child(path: Path) -> Child | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Child(
            str(data["run_id"]),
            str(data["run_dir"]),
            int(data["pid"]),
            float(data["created"] or 0.0),
            str(data.get("host") or ""),
            str(data["started"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def runner_alive(meta: dict[str, str]) -> bool | None:
    """Whether the campaign process that wrote ``meta`` still runs (None: none recorded)."""
    if not meta.get("runner_pid"):
        return None
    try:
        pid, created = int(meta["runner_pid"]), float(meta.get("runner_started") or 0.0)
    except ValueError:
        return None
    found = alive(pid, created or None, meta.get("runner_host"))
    return True if found is None else found  # another host's campaign: trust its record


def heartbeat_alive(run_dir: Path) -> bool | None:
    """A ``running`` run.json's harness: alive, dead, or None (no heartbeat to judge by)."""
    path = Path(run_dir) / "run.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        mtime = path.stat().st_mtime
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("status") != "running":
        return None
    found = alive(data.get("pid"), None)
    started = posix_time(data.get("started"))
    if found and started is not None:  # the pid is alive: is it the process that started it?
        try:
            found = psutil.Process(data["pid"]).create_time() <= started + 1.0
        except psutil.Error:
            found = False
    if found is None:  # a pid that cannot be checked from here: is it still beating?
        return time.time() - mtime < STALE_HEARTBEAT_S
    return found
