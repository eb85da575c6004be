"""Harness-owned records: the append-only submissions log (written, and read back by a resumed
run and by reports) and the structlog event log."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (temp file + rename) so a crash never leaves half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    os.replace(tmp, path)


class SubmissionLog:
    """Append-only JSON lines; each entry is flushed and fsynced before the call returns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        # opened once: an agent that exhausts the harness's descriptors (a connection flood)
        # must not make the record of a submission impossible to write
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        self._fd: int | None = os.open(path, flags, 0o644)

    def append(self, entry: dict[str, Any]) -> None:
        data = (json.dumps(entry, default=str) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __del__(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)


def read_submission_log(path: Path, problems: list[str] | None = None) -> list[dict[str, Any]]:
    """The log's entries in order; malformed lines are skipped with a note in ``problems``."""
    notes = problems if problems is not None else []
    if not path.exists():
        return []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        notes.append(f"submissions.jsonl unreadable ({exc.strerror or exc})")
        return []
    lines = text.splitlines()
    entries: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"submissions.jsonl line {number}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            last = number == len(lines) and not text.endswith("\n")
            notes.append(
                f"{where}: truncated last line ignored (the run is being written or crashed)"
                if last
                else f"{where}: invalid JSON ignored"
            )
            continue
        if not isinstance(entry, dict) or not _is_int(entry.get("submission_id")):
            notes.append(f"{where}: no integer submission_id, ignored")
            continue
        if not isinstance(entry.get("status"), str):
            notes.append(f"{where}: no status, ignored")
            continue
        entries.append(entry)
    return entries


def _is_int(value: Any) -> bool:
    """An integer, or a float that is one; never a bool (JSON ``true`` is not an id)."""
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


class EventLog:
    """A per-run structlog logger writing JSON lines; thread-safe, never global config."""

    def __init__(self, path: Path) -> None:
        import structlog

        self._fh = path.open("a", encoding="utf-8", buffering=1)
        self._lock = threading.Lock()
        self._logger = structlog.wrap_logger(
            structlog.WriteLogger(self._fh),
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.JSONRenderer(default=str),
            ],
        )

    def info(self, event: str, **fields: Any) -> None:
        with self._lock:
            self._logger.info(event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        with self._lock:
            self._logger.warning(event, **fields)

    def close(self) -> None:
        with self._lock:
            self._fh.close()
