"""The campaign's results store: one SQLite file, one row per cell and per submission.

Only the campaign process writes it, from the harness's own records of each run (never from
anything an agent wrote), so statistics read numbers the agents could not touch. SQLite
(stdlib) because a campaign is one directory a user copies around; a row is written the moment
its cell ends, in a transaction, so a killed campaign loses at most the cells still running.

Tables (columns documented in docs/campaigns.md):

- ``meta``: ``key``/``value`` (campaign name, file, created, schema version);
- ``cells``: the cell's id, replicate, axis values and resolved config, its status
  (``pending``, ``queued``, ``running``, ``completed``, ``failed``, ``interrupted``,
  ``infra_error``) and attempts, and the run's results: its scoring protocol, the engine
  that graded it and its precision, score (sealed:
  the test score of the selected checkpoint; reference: the best), the baseline on the score's
  split, improvement and their standard errors, dev best, selection gap, end reason (and
  ``infra_cause``), agent time, driver calls/tokens/cost, comparable;
- ``attempts``: one row per finished attempt of a cell (its run directory, status, end reason
  and cause), so a cell retried after an infrastructure failure keeps its earlier run on record;
- ``submissions``: per cell, each submission's score, status, time since the agent started,
  and the driver tokens and dollars spent by then (for scaling curves).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 2
STORE_NAME = "campaign.sqlite"

STATUSES = (
    "pending",
    "queued",
    "running",
    "completed",
    "failed",
    "interrupted",
    "infra_error",
)
"""``pending``: not handed to an executor; ``queued``: handed to one, waiting for a slot (no
start time); ``running``: its run's process started (``started`` is when); then how it ended,
as its run recorded it."""
FINISHED = ("completed",)
UNFINISHED = ("queued", "running")
"""Statuses only a live campaign process may leave a cell in."""

CELL_COLUMNS: dict[str, str] = {
    "cell_id": "TEXT PRIMARY KEY",
    "position": "INTEGER NOT NULL",
    "replicate": "INTEGER NOT NULL",
    "axes": "TEXT NOT NULL",
    "config": "TEXT NOT NULL",
    "task": "TEXT",
    "agent": "TEXT",
    "driver": "TEXT",
    "model": "TEXT",
    "seed": "INTEGER",
    "budget_seconds": "REAL",
    "status": "TEXT NOT NULL",
    "attempts": "INTEGER NOT NULL DEFAULT 0",
    "run_id": "TEXT",
    "run_dir": "TEXT",
    "worker": "TEXT",
    "started": "TEXT",
    "ended": "TEXT",
    "protocol": "TEXT",
    "engine": "TEXT",
    "precision": "TEXT",
    "score": "REAL",
    "score_se": "REAL",
    "baseline": "REAL",
    "baseline_se": "REAL",
    "dev_baseline": "REAL",
    "best": "REAL",
    "best_se": "REAL",
    "improvement": "REAL",
    "improvement_se": "REAL",
    "selected_submission": "INTEGER",
    "selection_rule": "TEXT",
    "selection_gap": "REAL",
    "selection_gap_se": "REAL",
    "oracle_gap": "REAL",
    "test_n": "INTEGER",
    "dev_n": "INTEGER",
    "end_reason": "TEXT",
    "infra_cause": "TEXT",
    "agent_seconds": "REAL",
    "submissions": "INTEGER",
    "valid_submissions": "INTEGER",
    "driver_calls": "INTEGER",
    "driver_tokens": "INTEGER",
    "driver_cost_usd": "REAL",
    "comparable": "INTEGER",
    "flagged": "INTEGER",
    "best_route": "TEXT",
    "error": "TEXT",
}
RESULT_COLUMNS = tuple(CELL_COLUMNS)[tuple(CELL_COLUMNS).index("ended") + 1 :]
"""What a run fills in (scores, end reason, error...): cleared when a cell starts again."""
ATTEMPT_COLUMNS: dict[str, str] = {
    "cell_id": "TEXT NOT NULL",
    "attempt": "INTEGER NOT NULL",
    "run_id": "TEXT",
    "run_dir": "TEXT",
    "status": "TEXT",
    "end_reason": "TEXT",
    "infra_cause": "TEXT",
    "error": "TEXT",
    "started": "TEXT",
    "ended": "TEXT",
}
SUBMISSION_COLUMNS: dict[str, str] = {
    "cell_id": "TEXT NOT NULL",
    "submission_id": "INTEGER NOT NULL",
    "status": "TEXT",
    "valid": "INTEGER",
    "score": "REAL",
    "score_se": "REAL",
    "elapsed_s": "REAL",
    "tokens_by_then": "INTEGER",
    "cost_by_then": "REAL",
}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class CampaignStore:
    """Open (or create) ``<campaign_dir>/campaign.sqlite``; safe to share between threads.

    ``read_only`` opens an existing store without writing anything (``autorl compare`` on a
    copy, a read-only mount or another user's results).
    """

    def __init__(self, campaign_dir: Path | str, *, read_only: bool = False) -> None:
        self.dir = Path(campaign_dir)
        self.path = self.dir / STORE_NAME
        self._lock = threading.Lock()
        self.read_only = read_only
        if read_only:
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
            self._db.row_factory = sqlite3.Row
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        with self._tx() as db:
            cells = ", ".join(f"{k} {v}" for k, v in CELL_COLUMNS.items())
            subs = ", ".join(f"{k} {v}" for k, v in SUBMISSION_COLUMNS.items())
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            db.execute(f"CREATE TABLE IF NOT EXISTS cells ({cells})")
            have = {r["name"] for r in db.execute("PRAGMA table_info(cells)")}
            for name, kind in CELL_COLUMNS.items():  # a store from an older autorl-campaign
                if name not in have:
                    db.execute(f"ALTER TABLE cells ADD COLUMN {name} {kind}")
            db.execute(
                f"CREATE TABLE IF NOT EXISTS submissions ({subs}, "
                "PRIMARY KEY (cell_id, submission_id))"
            )
            attempts = ", ".join(f"{k} {v}" for k, v in ATTEMPT_COLUMNS.items())
            db.execute(
                f"CREATE TABLE IF NOT EXISTS attempts ({attempts}, PRIMARY KEY (cell_id, attempt))"
            )
            db.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?), ('created', ?)",
                (str(SCHEMA_VERSION), _now()),
            )

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        """Close; a writer leaves a plain database file behind (no -wal/-shm), so a later
        read-only open of a copied or read-only directory needs to write nothing."""
        with self._lock:
            if not self.read_only:
                # another process may still have it open: then WAL stays until it closes
                with contextlib.suppress(sqlite3.OperationalError):
                    self._db.execute("PRAGMA journal_mode=DELETE")
            self._db.close()

    # meta ------------------------------------------------------------------------------------

    def set_meta(self, **values: Any) -> None:
        with self._tx() as db:
            db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in values.items()],
            )

    def meta(self) -> dict[str, str]:
        with self._lock:
            return {r["key"]: r["value"] for r in self._db.execute("SELECT * FROM meta")}

    # cells -------------------------------------------------------------------------------------

    def add_cells(self, cells: list[Mapping[str, Any]]) -> int:
        """Insert cells not yet in the store (by id); returns how many were new. A cell already
        there keeps its status and results: re-running a campaign file is idempotent."""
        rows = []
        for c in cells:
            config = c["config"]
            rows.append(
                (
                    c["cell_id"],
                    c["position"],
                    c["replicate"],
                    json.dumps(c["axes"], sort_keys=True),
                    json.dumps(config, sort_keys=True),
                    config.get("task"),
                    config.get("agent"),
                    config.get("driver"),
                    config.get("model"),
                    config.get("seed"),
                    (config.get("budget") or {}).get("wall_seconds"),
                )
            )
        with self._tx() as db:
            before = db.total_changes
            db.executemany(
                "INSERT OR IGNORE INTO cells (cell_id, position, replicate, axes, config, task, "
                "agent, driver, model, seed, budget_seconds, status) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                rows,
            )
            return db.total_changes - before

    def cells(self, status: str | None = None) -> list[dict[str, Any]]:
        query = "SELECT * FROM cells" + (" WHERE status = ?" if status else "")
        with self._lock:
            rows = self._db.execute(
                query + " ORDER BY position, replicate", (status,) if status else ()
            )
            return [_decode(dict(r)) for r in rows]

    def cell(self, cell_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM cells WHERE cell_id = ?", (cell_id,)).fetchone()
        return _decode(dict(row)) if row else None

    def queue(self, cell_id: str, run_id: str, run_dir: Path) -> None:
        """Handed to the executor: a new attempt's run id, no start time yet. The previous
        attempt's results leave the row (``attempts`` keeps them), so nothing of an earlier run
        is read as this one's."""
        with self._tx() as db:
            self._clear(db, cell_id)
            db.execute(
                "UPDATE cells SET status = 'queued', run_id = ?, run_dir = ? WHERE cell_id = ?",
                (run_id, str(run_dir), cell_id),
            )

    @staticmethod
    def _clear(db: sqlite3.Connection, cell_id: str) -> None:
        cleared = ", ".join(f"{k} = NULL" for k in RESULT_COLUMNS)
        db.execute(
            f"UPDATE cells SET worker = NULL, started = NULL, ended = NULL, {cleared} "
            "WHERE cell_id = ?",
            (cell_id,),
        )
        db.execute("DELETE FROM submissions WHERE cell_id = ?", (cell_id,))

    def start(
        self,
        cell_id: str,
        run_id: str,
        run_dir: Path | str,
        started: str | None = None,
        worker: str = "",
    ) -> bool:
        """The cell's run process started: a new attempt. False (nothing written) when the
        cell is already running; a cell that was not queued loses its earlier results first."""
        with self._tx() as db:
            row = db.execute("SELECT status FROM cells WHERE cell_id = ?", (cell_id,)).fetchone()
            if row is None or row["status"] == "running":
                return False
            if row["status"] != "queued":
                self._clear(db, cell_id)
            db.execute(
                "UPDATE cells SET status = 'running', attempts = attempts + 1, run_id = ?, "
                "run_dir = ?, worker = ?, started = ? WHERE cell_id = ?",
                (run_id, str(run_dir), worker, started or _now(), cell_id),
            )
            return True

    def unqueue(self) -> int:
        """Queued cells whose campaign stopped before they started: ``pending`` again."""
        with self._tx() as db:
            return db.execute(
                "UPDATE cells SET status = 'pending' WHERE status = 'queued'"
            ).rowcount

    def finish(
        self,
        cell_id: str,
        *,
        status: str,
        results: Mapping[str, Any] | None = None,
        submissions: list[Mapping[str, Any]] | None = None,
        error: str | None = None,
        worker: str | None = None,
        ended: str | None = None,
    ) -> None:
        """Record a cell's end and its results, in one transaction (``ended``: when its run
        recorded its end; default now)."""
        if status not in STATUSES:
            raise ValueError(f"unknown cell status {status!r}")
        values: dict[str, Any] = {k: v for k, v in (results or {}).items() if k in CELL_COLUMNS}
        values.update(status=status, ended=ended or _now(), error=error)
        if worker:
            values["worker"] = worker
        assignments = ", ".join(f"{k} = ?" for k in values)
        with self._tx() as db:
            db.execute(
                f"UPDATE cells SET {assignments} WHERE cell_id = ?", (*values.values(), cell_id)
            )
            db.execute(
                "INSERT OR REPLACE INTO attempts (cell_id, attempt, run_id, run_dir, status, "
                "end_reason, infra_cause, error, started, ended) "
                "SELECT cell_id, attempts, run_id, run_dir, status, end_reason, infra_cause, "
                "error, started, ended FROM cells WHERE cell_id = ? AND attempts > 0",
                (cell_id,),
            )
            db.execute("DELETE FROM submissions WHERE cell_id = ?", (cell_id,))
            for sub in submissions or []:
                row = {k: sub.get(k) for k in SUBMISSION_COLUMNS if k != "cell_id"}
                db.execute(
                    f"INSERT INTO submissions (cell_id, {', '.join(row)}) "
                    f"VALUES (?, {', '.join('?' for _ in row)})",
                    (cell_id, *row.values()),
                )

    def submissions(self, cell_id: str | None = None) -> list[dict[str, Any]]:
        query = "SELECT * FROM submissions" + (" WHERE cell_id = ?" if cell_id else "")
        with self._lock:
            rows = self._db.execute(
                query + " ORDER BY cell_id, submission_id", (cell_id,) if cell_id else ()
            )
            return [dict(r) for r in rows]

    def attempts(self, cell_id: str | None = None) -> list[dict[str, Any]]:
        """Every finished attempt (a cell retried after an infra_error has several)."""
        query = "SELECT * FROM attempts" + (" WHERE cell_id = ?" if cell_id else "")
        with self._lock:
            try:
                rows = self._db.execute(
                    query + " ORDER BY cell_id, attempt", (cell_id,) if cell_id else ()
                )
                return [dict(r) for r in rows]
            except sqlite3.OperationalError:  # a read-only store from before attempts existed
                return []

    def counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT status, COUNT(*) AS n FROM cells GROUP BY status")
            found = {r["status"]: r["n"] for r in rows}
        return {s: found.get(s, 0) for s in STATUSES}


def _decode(row: dict[str, Any]) -> dict[str, Any]:
    for key in ("axes", "config"):
        if isinstance(row.get(key), str):
            row[key] = json.loads(row[key])
    for key in ("comparable", "flagged"):
        if row.get(key) is not None:
            row[key] = bool(row[key])
    return row


def open_store(
    campaign_dir: Path | str, *, must_exist: bool = False, read_only: bool = False
) -> CampaignStore:
    """The store of a campaign directory; with ``must_exist``, a clear error when it is not one."""
    from autorl.errors import AutorlError

    path = Path(campaign_dir) / STORE_NAME
    if must_exist and not path.is_file():
        raise AutorlError(
            f"{campaign_dir} is not a campaign directory: {STORE_NAME} is missing",
            hint="pass the directory `autorl campaign run FILE` wrote (its --out, by default "
            "campaigns/<name>)",
        )
    return CampaignStore(campaign_dir, read_only=read_only)
