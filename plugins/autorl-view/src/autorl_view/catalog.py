"""What the viewer serves: the runs and campaigns found under one directory.

A run is a directory with ``manifest.json`` (read with :func:`autorl_records.load_run`); a
campaign is one with ``campaign.sqlite`` (read through ``autorl_campaign``'s store, read-only).
Both are found at most :data:`MAX_DEPTH` levels below the served directory, links are never
followed, and a page names a run by its path relative to that directory: a request can only
reach what the catalog found, never an arbitrary path.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autorl.errors import AutorlError

MANIFEST = "manifest.json"
CAMPAIGN_STORE = "campaign.sqlite"
MAX_DEPTH = 4
"""A campaign keeps its runs at ``<campaign>/runs/<cell>``; a runs directory of campaigns
is one level more."""
MAX_ENTRIES = 20_000
"""Directories looked at, at most, per scan (a huge tree is shown in part, never hangs)."""
FILTERS = ("task", "agent", "driver", "model", "campaign", "status", "protocol")


@dataclass
class Catalog:
    """The served directory and what is below it (rescanned on each listing)."""

    root: Path
    runs: dict[str, Path] = field(default_factory=dict)
    campaigns: dict[str, Path] = field(default_factory=dict)
    truncated: bool = False
    _rows: dict[str, tuple[tuple[float, ...], dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def open(cls, root: Path) -> Catalog:
        root = Path(root).resolve()
        if not root.is_dir():
            raise AutorlError(
                f"{root} is not a directory",
                hint="pass a runs directory, one run's directory or a campaign's directory "
                "(default: ./runs)",
            )
        catalog = cls(root)
        catalog.scan()
        return catalog

    def scan(self) -> None:
        """Find runs and campaigns (no links followed; hidden directories and a run's own
        inside, such as its workspace, are not searched)."""
        runs: dict[str, Path] = {}
        campaigns: dict[str, Path] = {}
        seen = 0
        stack: list[tuple[Path, int]] = [(self.root, 0)]
        self.truncated = False
        while stack:
            folder, depth = stack.pop()
            seen += 1
            if seen > MAX_ENTRIES:
                self.truncated = True
                break
            key = self.key(folder)
            if _regular(folder / MANIFEST):
                runs[key] = folder
                continue  # a run's inside (workspace, home) is the agent's: never searched
            if _regular(folder / CAMPAIGN_STORE):
                campaigns[key] = folder
            if depth >= MAX_DEPTH:
                continue
            with contextlib.suppress(OSError):
                children = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
                for entry in children:
                    if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                        continue
                    stack.append((Path(entry.path), depth + 1))
        self.runs, self.campaigns = runs, campaigns

    def key(self, folder: Path) -> str:
        rel = folder.relative_to(self.root).as_posix()
        return "" if rel == "." else rel

    def run_key(self, run_dir: str | Path | None) -> str | None:
        """The catalog's name for a run directory a campaign recorded (None when it is not
        below the served directory or not a run)."""
        if not run_dir:
            return None
        try:
            key = self.key(Path(run_dir).resolve())
        except (ValueError, OSError):
            return None
        if key not in self.runs:
            self.scan()
        return key if key in self.runs else None

    def campaign_of(self, key: str) -> str | None:
        """The campaign a run lies in (the nearest campaign directory above it)."""
        parts = key.split("/") if key else []
        for n in range(len(parts) - 1, -1, -1):
            above = "/".join(parts[:n])
            if above in self.campaigns:
                return Path(self.campaigns[above]).name
        return None

    def row(self, key: str) -> dict[str, Any]:
        """The runs list's row of one run (cached until its record files change)."""
        run_dir = self.runs[key]
        stamp = _stamp(run_dir)
        cached = self._rows.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        row = run_row(run_dir)
        row["key"] = key
        row["campaign"] = self.campaign_of(key)
        self._rows[key] = (stamp, row)
        return row

    def rows(self) -> list[dict[str, Any]]:
        """Every run's row, newest first (after a rescan)."""
        self.scan()
        rows = [self.row(key) for key in self.runs]
        return sorted(rows, key=lambda r: str(r.get("created") or ""), reverse=True)


def matching(rows: list[dict[str, Any]], filters: dict[str, str]) -> list[dict[str, Any]]:
    """The rows whose columns equal every filter given (an empty filter matches all)."""
    for name, wanted in filters.items():
        if name in FILTERS and wanted:
            rows = [r for r in rows if str(r.get(name) or "") == wanted]
    return rows


def run_row(run_dir: Path) -> dict[str, Any]:
    """One run's numbers for the list, from its record (an unreadable run is a row that says
    why)."""
    from autorl_records import load_run, summary

    try:
        record = load_run(run_dir)
        data = summary(record)
    except (AutorlError, OSError, ValueError) as exc:
        return {"run_id": run_dir.name, "status": "unreadable", "error": str(exc)}
    analysis = record.contributions.get("analysis")
    flags = (analysis.data.get("flags") if analysis is not None else None) or []
    return {
        "run_id": data["run_id"],
        "created": data.get("created"),
        "task": data.get("task"),
        "agent": data.get("agent"),
        "driver": data.get("driver"),
        "model": data.get("model"),
        "status": data.get("status"),
        "protocol": data.get("protocol"),
        "baseline": data.get("baseline"),
        "baseline_se": data.get("baseline_se"),
        "score": data.get("score"),
        "score_se": data.get("score_se"),
        "improvement": data.get("improvement"),
        "improvement_se": data.get("improvement_se"),
        "flags": [f for f in flags if isinstance(f, dict)],
        "end_reason": data.get("end_reason"),
        "agent_seconds": data.get("agent_seconds"),
        "budget_seconds": data.get("budget_seconds"),
        "submissions": len(data.get("submissions") or []),
    }


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _stamp(run_dir: Path) -> tuple[float, ...]:
    """Modification times of the files a row is read from (a changed one means re-read)."""
    names = ("manifest.json", "run.json", "submissions.jsonl", "baseline.json", "contributions")
    stamp = []
    for name in names:
        try:
            stamp.append((run_dir / name).stat().st_mtime)
        except OSError:
            stamp.append(0.0)
    return tuple(stamp)
